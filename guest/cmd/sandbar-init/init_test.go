//go:build linux

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadModuleList(t *testing.T) {
	in := "lib/modules/6.1/kernel/drivers/virtio/virtio_ring.ko\n\n# comment\n/lib/modules/6.1/kernel/fs/ext4/ext4.ko\n  lib/x.ko  \n"
	got, err := readModuleList(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/lib/modules/6.1/kernel/drivers/virtio/virtio_ring.ko", "/lib/modules/6.1/kernel/fs/ext4/ext4.ko", "/lib/x.ko"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestLoadModulesMissingList(t *testing.T) {
	n, err := loadModules(filepath.Join(t.TempDir(), "modules"), nil, nil)
	if n != 0 || err != nil {
		t.Fatalf("loadModules on no list = %d, %v; want 0, nil", n, err)
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{
		"/lib/modules/6.1/kernel/arch/x86/crypto/crc32c-intel.ko": "crc32c_intel",
		"/lib/modules/6.1/kernel/fs/9p/9p.ko":                     "9p",
	} {
		if got := moduleName(in); got != want {
			t.Errorf("moduleName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHasExt4Superblock(t *testing.T) {
	dir := t.TempDir()
	withMagic := make([]byte, 4096)
	withMagic[1080], withMagic[1081] = 0x53, 0xef
	wrongMagic := make([]byte, 4096)
	wrongMagic[1080], wrongMagic[1081] = 0xef, 0x53
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"ext4", withMagic, true},
		{"blank", make([]byte, 4096), false},
		{"byte-swapped", wrongMagic, false},
		{"shorter than a superblock", make([]byte, 512), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if err := os.WriteFile(p, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := hasExt4Superblock(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("hasExt4Superblock = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := hasExt4Superblock(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("no error for a missing disk")
	}
}
