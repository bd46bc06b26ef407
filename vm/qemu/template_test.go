package qemu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/vm"
)

// TestTemplateMismatch: each way a VM differs from its template is named
// in words a person reads in the session's log.
func TestTemplateMismatch(t *testing.T) {
	base := templateInfo{Version: templateMetaV, QEMU: "q", Arch: "amd64", Kernel: "k", Initramfs: "i", CPUs: 2, Memory: 2048 * vm.MiB,
		Disks: []bool{true, true, false, true}, Network: vm.NetworkSocket, Console: true}
	for _, tt := range []struct {
		name string
		edit func(*templateInfo)
		want string
	}{
		{"same", func(*templateInfo) {}, ""},
		{"cpus", func(t *templateInfo) { t.CPUs = 4 }, "4 vCPUs differ from the template's 2"},
		{"memory", func(t *templateInfo) { t.Memory = 4096 * vm.MiB }, "4096 MiB of memory differ from the template's 2048 MiB"},
		{"network", func(t *templateInfo) { t.Network = vm.NetworkOff }, "the network (off) differs"},
		{"disks", func(t *templateInfo) { t.Disks = append(t.Disks, true) }, "5 disks differ from the template's 4"},
		{"readonly", func(t *templateInfo) { t.Disks = []bool{true, true, true, true} }, "read-only flags"},
		{"kernel", func(t *templateInfo) { t.Kernel = "other" }, "not the template's image's"},
		{"qemu", func(t *templateInfo) { t.KVM = true }, "not this QEMU"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.Disks = append([]bool(nil), base.Disks...)
			tt.edit(&s)
			got := base.mismatch(s)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("mismatch = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadTemplate: a template directory that is missing, foreign or
// truncated is refused before QEMU starts, as vm.ErrNoTemplate or
// vm.ErrBadState (the caller then boots cold).
func TestReadTemplate(t *testing.T) {
	dir := t.TempDir()
	if _, err := readTemplate(filepath.Join(dir, "none")); !errors.Is(err, vm.ErrNoTemplate) {
		t.Errorf("missing: %v, want ErrNoTemplate", err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(templateMeta, `{"version": 99}`)
	if _, err := readTemplate(dir); !errors.Is(err, vm.ErrBadState) {
		t.Errorf("foreign: %v, want ErrBadState", err)
	}
	write(templateMeta, `{"version": 1, "memory": 8192, "ram_size": 8192, "state_size": 10}`)
	write(templateRAM, strings.Repeat("r", 8192))
	write(templateState, "short")
	if _, err := readTemplate(dir); !errors.Is(err, vm.ErrBadState) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated: %v, want ErrBadState saying truncated", err)
	}
	write(templateState, "0123456789")
	if _, err := readTemplate(dir); err != nil {
		t.Errorf("whole: %v", err)
	}
	write(templateRAM, "r")
	if _, err := readTemplate(dir); !errors.Is(err, vm.ErrBadState) {
		t.Errorf("RAM truncated: %v, want ErrBadState", err)
	}
}
