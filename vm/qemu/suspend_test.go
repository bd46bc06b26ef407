package qemu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sandbar/vm"
)

// TestOpenStateRefuses: a state file that is missing, empty or a
// directory is vm.ErrBadState before any QEMU starts, with its path in
// the message.
func TestOpenStateRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, p := range []string{filepath.Join(dir, "missing"), empty, dir} {
		f, err := openState(p)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", p)
			continue
		}
		if !errors.Is(err, vm.ErrBadState) {
			t.Errorf("%s: %v, want vm.ErrBadState", p, err)
		}
	}
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("QEVM"), 0o600)
	f, err := openState(good)
	if err != nil {
		t.Fatalf("a file with content: %v", err)
	}
	f.Close()
}

// TestResumeRefusesVZShape: the vz shape's channel is vsock, which a
// resumed guest would find gone.
func TestResumeRefusesVZShape(t *testing.T) {
	_, err := New(Config{Shape: ShapeVZ}).Resume(context.Background(), vm.Spec{}, "/nonexistent")
	if !errors.Is(err, vm.ErrUnsupported) {
		t.Errorf("vz shape resume: %v, want vm.ErrUnsupported", err)
	}
}
