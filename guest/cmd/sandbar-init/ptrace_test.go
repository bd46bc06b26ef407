package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRestrictPtrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ptrace_scope")
	os.WriteFile(p, []byte("0\n"), 0o644)
	if err := restrictPtrace(p); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "1\n" {
		t.Errorf("ptrace_scope holds %q, want 1", b)
	}
	err := restrictPtrace(filepath.Join(t.TempDir(), "yama", "ptrace_scope"))
	if err == nil || !strings.Contains(err.Error(), "no Yama") {
		t.Errorf("without Yama: %v, want it said", err)
	}
}
