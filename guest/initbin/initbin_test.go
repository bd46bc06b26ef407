package initbin

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"testing"
)

func TestBinaryOrNotEmbedded(t *testing.T) {
	b, err := Binary()
	switch {
	case errors.Is(err, ErrNotEmbedded):
		// A plain `go test` build: nothing embedded, and the error says how to fix it.
		if !bytes.Contains([]byte(err.Error()), []byte("make build")) {
			t.Errorf("error %q does not say what to do", err)
		}
	case err != nil:
		t.Fatal(err)
	default:
		if _, err := elf.NewFile(bytes.NewReader(b)); err != nil {
			t.Errorf("embedded init is not an ELF binary: %v", err)
		}
	}
}

func TestModuleRootAndBuild(t *testing.T) {
	wd, _ := os.Getwd()
	root, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ModuleRoot(t.TempDir()); err == nil {
		t.Error("ModuleRoot found a module above a temp dir")
	}
	if testing.Short() {
		t.Skip("building sandbar-init is slow")
	}
	b, err := Build(context.Background(), root, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.EM_X86_64 {
		t.Errorf("machine %v, want x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("sandbar-init is dynamically linked; PID 1 must be static")
		}
	}
}
