package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestEngineFiles(t *testing.T) {
	p := Paths{Home: "/data/sandbar"}
	if got, want := p.EngineLock(), "/data/sandbar/engine.lock"; got != want {
		t.Errorf("EngineLock = %s, want %s", got, want)
	}
	if got, want := p.EngineLog(), "/data/sandbar/engine.log"; got != want {
		t.Errorf("EngineLog = %s, want %s", got, want)
	}
	if got, want := p.EngineSocket(), "/data/sandbar/engine.sock"; got != want {
		t.Errorf("EngineSocket = %s, want %s", got, want)
	}
	long := Paths{Home: "/" + strings.Repeat("long-folder-name/", 8)}
	s := long.EngineSocket()
	if len(s) >= maxSocketPath || !strings.HasPrefix(filepath.Base(s), "sandbar-") {
		t.Errorf("a long data directory's socket is %s (%d bytes): want a short one in the temp directory", s, len(s))
	}
	if other := (Paths{Home: long.Home + "x"}).EngineSocket(); other == s {
		t.Errorf("two long data directories share the socket %s", s)
	}
}
