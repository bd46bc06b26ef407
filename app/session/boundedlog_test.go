package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogFileRotates: a log written far past its bound is at most that
// bound in agent.log plus one older agent.log.1, no agent.log.2, and the
// two hold the newest lines, whole and in order.
func TestLogFileRotates(t *testing.T) {
	const max = 64 << 10
	path := filepath.Join(t.TempDir(), "agent.log")
	l, err := openBoundedLog(path, max)
	if err != nil {
		t.Fatal(err)
	}
	const lines = 10000 // about 14 times the bound
	for i := range lines {
		fmt.Fprintf(l, "line %06d %s\n", i, strings.Repeat("y", 80))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, name := range []string{path + ".1", path} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(name), err)
		}
		if len(b) > max {
			t.Errorf("%s has %d bytes, more than the bound %d", filepath.Base(name), len(b), max)
		}
		all = append(all, b...)
	}
	if _, err := os.Stat(path + ".2"); err == nil {
		t.Error("agent.log.2 exists: at most one older file is kept")
	}
	got := strings.Split(strings.TrimSuffix(string(all), "\n"), "\n")
	if len(got) < max/100 {
		t.Fatalf("the two files hold %d lines; want at least the bound's worth", len(got))
	}
	first := lines - len(got)
	for i, line := range got {
		if want := fmt.Sprintf("line %06d ", first+i); !strings.HasPrefix(line, want) {
			t.Fatalf("line %d of the kept ones is %.20q, want it to start %q: the newest lines, whole and in order", i, line, want)
		}
	}
	// Reopening goes on from the size on disk.
	l, err = openBoundedLog(path, max)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	fmt.Fprintf(l, "%s\n", bytes.Repeat([]byte("z"), max-len(before)+1))
	l.Close()
	if after, _ := os.ReadFile(path); len(after) > max {
		t.Errorf("after reopening, agent.log has %d bytes, more than the bound", len(after))
	}
}

// TestAgentLogLinesAreBounded: an agent that prints one 1 MiB line has it
// stored, logged and published cut to maxLogText with a note, and the
// line after it whole.
func TestAgentLogLinesAreBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", "head -c 1048576 /dev/zero | tr '\\0' a; echo; echo after"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	lines, err := f.m.Logs(ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var long, after bool
	for _, l := range lines {
		if strings.HasPrefix(l.Text, "aaaa") {
			long = true
			want := fmt.Sprintf(" … [line truncated: %d bytes dropped]", 1<<20-maxLogText)
			if len(l.Text) != maxLogText+len(want) || !strings.HasSuffix(l.Text, want) {
				t.Errorf("the 1 MiB line is stored as %d bytes ending %q; want %d bytes and the note %q",
					len(l.Text), l.Text[max(0, len(l.Text)-60):], maxLogText, want)
			}
		}
		after = after || l.Text == "after"
	}
	if !long || !after {
		t.Errorf("stored lines: the long one %v, the one after %v; want both", long, after)
	}
	b, err := os.ReadFile(f.paths.SessionDir(s.ID).AgentLog())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4*maxLogText {
		t.Errorf("agent.log has %d bytes for a 1 MiB line cut to %d", len(b), maxLogText)
	}
}
