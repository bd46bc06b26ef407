package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionDirNames pins the name of every file of a session directory
// and of the data directory: sessions an older Sandbar made are read by
// these names, so a rename is a migration, not a refactor.
func TestSessionDirNames(t *testing.T) {
	p := Paths{Home: "/data"}
	d := p.SessionDir("abc123")
	for _, c := range []struct{ what, got, want string }{
		{"Path", d.Path(), "/data/sessions/abc123"},
		{"Session", p.Session("abc123"), "/data/sessions/abc123"},
		{"ID", d.ID(), "abc123"},
		{"AgentLog", d.AgentLog(), "/data/sessions/abc123/agent.log"},
		{"Transcript", d.Transcript(), "/data/sessions/abc123/transcript.jsonl"},
		{"VMDir", d.VMDir(), "/data/sessions/abc123"},
		{"Console", d.Console(), "/data/sessions/abc123/console.log"},
		{"Scratch", d.Scratch(), "/data/sessions/abc123/scratch.img"},
		{"BaseCommit", d.BaseCommit(), "/data/sessions/abc123/base-commit"},
		{"BaseDisk", d.BaseDisk(), "/data/sessions/abc123/base-disk"},
		{"SavedAt", d.SavedAt(), "/data/sessions/abc123/saved-at"},
		{"SaveError", d.SaveError(), "/data/sessions/abc123/save-error"},
		{"SaveSpool", d.SaveSpool(), "/data/sessions/abc123/save.partial"},
		{"NetworkRepo", d.NetworkRepo(), "/data/sessions/abc123/network.repo"},
		{"Export", d.Export(), "/data/sessions/abc123/export"},
		{"LegacyWorkspace", d.LegacyWorkspace(), "/data/sessions/abc123/workspace"},
		{"DB", p.DB(), "/data/sandbar.db"},
		{"EngineLock", p.EngineLock(), "/data/engine.lock"},
		{"EngineSocket", p.EngineSocket(), "/data/engine.sock"},
		{"EngineLog", p.EngineLog(), "/data/engine.log"},
		{"NewSessionDir", NewSessionDir("/x/y").AgentLog(), "/x/y/agent.log"},
	} {
		if c.got != filepath.FromSlash(c.want) {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	for name, want := range map[string]bool{".export-123": true, ".export-old-9": true, ".export-": false, "export": false, "x.export-1": false} {
		if got := IsExportTemp(name); got != want {
			t.Errorf("IsExportTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestEngineSocketTooLong: a data directory whose socket path would pass
// a unix socket's limit gets one in the temp directory, the same each
// time for that directory and another for another.
func TestEngineSocketTooLong(t *testing.T) {
	long := "/" + strings.Repeat("d", 120)
	a, b := Paths{Home: long}.EngineSocket(), Paths{Home: long + "x"}.EngineSocket()
	if len(a) >= 100 || !strings.HasSuffix(a, ".sock") || a != (Paths{Home: long}).EngineSocket() || a == b {
		t.Errorf("EngineSocket for a long home = %q (and %q for another)", a, b)
	}
}
