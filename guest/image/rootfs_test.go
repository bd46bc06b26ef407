package image

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func findEntry(es []entry, name string) (entry, bool) {
	for _, e := range es {
		if e.name == name {
			return e, true
		}
	}
	return entry{}, false
}

func TestSystemFilesUsers(t *testing.T) {
	es := systemFiles(map[string]bool{}, []byte("CA"), "")
	tables := []struct {
		file   string
		fields int
		want   map[string][]string // name -> fields that must match (index:value pairs flattened)
	}{
		{"etc/passwd", 7, map[string][]string{"root": {"x", "0", "0", "root", "/root", "/bin/bash"}, "nobody": {"x", "65534", "65534"}}},
		{"etc/group", 4, map[string][]string{"root": {"x", "0"}, "tty": {"x", "5"}, "nogroup": {"x", "65534"}}},
		{"etc/shadow", 9, map[string][]string{"root": {"*"}, "nobody": {"*"}}},
		{"etc/gshadow", 4, map[string][]string{"root": {"*"}}},
	}
	for _, tt := range tables {
		t.Run(tt.file, func(t *testing.T) {
			e, ok := findEntry(es, tt.file)
			if !ok {
				t.Fatalf("no %s", tt.file)
			}
			if !strings.HasSuffix(string(e.data), "\n") {
				t.Errorf("%s does not end in a newline", tt.file)
			}
			seen := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSuffix(string(e.data), "\n"), "\n") {
				f := strings.Split(line, ":")
				if len(f) != tt.fields {
					t.Fatalf("%s line %q has %d fields, want %d", tt.file, line, len(f), tt.fields)
				}
				if seen[f[0]] {
					t.Errorf("%s: %s twice", tt.file, f[0])
				}
				seen[f[0]] = true
				for i, w := range tt.want[f[0]] {
					if f[i+1] != w {
						t.Errorf("%s: %s field %d = %q, want %q", tt.file, f[0], i+1, f[i+1], w)
					}
				}
			}
			for name := range tt.want {
				if !seen[name] {
					t.Errorf("%s has no %s", tt.file, name)
				}
			}
		})
	}
	if e, _ := findEntry(es, "etc/shadow"); e.mode&0o077 != 0 {
		t.Errorf("etc/shadow mode %o is readable by others", e.mode)
	}
	if e, _ := findEntry(es, "etc/ssl/certs/ca-certificates.crt"); string(e.data) != "CA" {
		t.Errorf("CA bundle = %q", e.data)
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"tmp", 0o1777}, {"var/tmp", 0o1777}, {"workspace", 0o755}, {"opt/agent", 0o755}, {"dev", 0o755}, {"proc", 0o555}, {"root", 0o700}} {
		e, ok := findEntry(es, d.name)
		if !ok || !e.dir || e.mode != d.mode {
			t.Errorf("/%s = %+v, want a directory with mode %o", d.name, e, d.mode)
		}
	}
}

func TestSystemFilesAlternatives(t *testing.T) {
	tests := []struct {
		pkgs map[string]bool
		name string
		want string // "" means absent
	}{
		{map[string]bool{"mawk": true}, "usr/bin/awk", "mawk"},
		{map[string]bool{}, "usr/bin/awk", ""},
		{map[string]bool{"less": true}, "usr/bin/pager", "less"},
		{map[string]bool{"debianutils": true}, "usr/bin/which", "which.debianutils"},
		{map[string]bool{"dash": true}, "usr/bin/sh", "dash"},
		{map[string]bool{}, "usr/bin/sh", "bash"},
	}
	for _, tt := range tests {
		e, ok := findEntry(systemFiles(tt.pkgs, nil, ""), tt.name)
		if got := map[bool]string{true: e.link, false: ""}[ok]; got != tt.want {
			t.Errorf("pkgs %v: /%s -> %q, want %q", tt.pkgs, tt.name, got, tt.want)
		}
	}
}

func TestCABundle(t *testing.T) {
	tests := []struct {
		certs map[string][]byte
		want  string
	}{
		{nil, ""},
		{map[string][]byte{"b.crt": []byte("B\n"), "a.crt": []byte("A")}, "A\nB\n"},
		{map[string][]byte{"Z.crt": []byte("Z\n"), "a.crt": []byte("a\n"), "empty.crt": nil}, "Z\na\n"},
	}
	for _, tt := range tests {
		if got := string(caBundle(tt.certs)); got != tt.want {
			t.Errorf("caBundle(%v) = %q, want %q", tt.certs, got, tt.want)
		}
	}
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{"./usr/bin/x": "usr/bin/x", "/etc/": "etc", "usr/../etc/a": "etc/a", "./": ""} {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeepModuleFile(t *testing.T) {
	for name, want := range map[string]bool{
		"kernel/fs/ext4/ext4.ko":                     true,
		"kernel/fs/ext4/ext4.ko.xz":                  true,
		"modules.builtin":                            true,
		"modules.builtin.modinfo":                    true,
		"modules.order":                              true,
		"modules.alias.bin":                          false,
		"kernel/drivers/README":                      false,
		"kernel/drivers/kobject.txt":                 false,
		"kernel/drivers/gpu/drm/drm.ko":              false,
		"kernel/drivers/net/ethernet/intel/e1000.ko": false,
		"kernel/drivers/net/virtio_net.ko":           true,
	} {
		if got := keepModuleFile(name); got != want {
			t.Errorf("keepModuleFile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestIsOffline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, refused := http.Get("http://" + addr + "/")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", refused, true},
		{"dns", &net.DNSError{Err: "no such host", Name: "deb.example", IsNotFound: true}, true},
		{"checksum", errors.New("checksum mismatch"), false},
		{"canceled", context.Canceled, false},
	}
	for _, tt := range tests {
		if got := isOffline(tt.err); got != tt.want {
			t.Errorf("%s: isOffline(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	if err := networkError("read index", refused, discardLogger()); !errors.Is(err, ErrOffline) {
		t.Errorf("networkError(refused) = %v, want ErrOffline", err)
	}
}

func TestRunAllCancelsOnFirstError(t *testing.T) {
	boom := errors.New("boom")
	var canceled atomic.Int32
	err := runAll(context.Background(), discardLogger(), []job{
		{"fails", func(ctx context.Context) error { return boom }},
		{"waits", func(ctx context.Context) error { <-ctx.Done(); canceled.Add(1); return ctx.Err() }},
		{"waits too", func(ctx context.Context) error { <-ctx.Done(); canceled.Add(1); return nil }},
	})
	if !errors.Is(err, boom) {
		t.Fatalf("runAll = %v, want boom", err)
	}
	if canceled.Load() != 2 {
		t.Errorf("%d jobs saw the cancel, want 2", canceled.Load())
	}
}

func TestTarToExt4ProducerError(t *testing.T) {
	out := t.TempDir() + "/x.ext4"
	boom := errors.New("producer failed")
	err := TarToExt4(out, func(w io.Writer) error {
		_, _ = w.Write([]byte("not a tar"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("TarToExt4 = %v, want the producer's error", err)
	}
}
