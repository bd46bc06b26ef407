package caplog

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const marker = "[earlier output trimmed]\n"

// readBoth is the older copy and the file, in that order.
func readBoth(t *testing.T, path string) (older, newer []byte) {
	t.Helper()
	older, _ = os.ReadFile(Older(path))
	newer, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return older, newer
}

// TestCapHoldsAndNewestStay: written far past its cap, a log and its
// older copy together hold at most the cap, no third file appears, the
// newest lines are kept whole and in order, and each file begun after
// output was dropped starts with the marker.
func TestCapHoldsAndNewestStay(t *testing.T) {
	for _, buf := range []int{0, 4 << 10} {
		t.Run(fmt.Sprintf("buffer %d", buf), func(t *testing.T) {
			const max = 64 << 10
			path := filepath.Join(t.TempDir(), "x.log")
			l, err := Open(path, max, []byte(marker), buf)
			if err != nil {
				t.Fatal(err)
			}
			const lines = 10000 // about 14 times the cap
			for i := range lines {
				fmt.Fprintf(l, "line %06d %s\n", i, strings.Repeat("y", 80))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			older, newer := readBoth(t, path)
			if n := len(older) + len(newer); n > max {
				t.Errorf("the two files hold %d bytes, more than the cap %d", n, max)
			}
			if _, err := os.Stat(path + ".2"); err == nil {
				t.Error("x.log.2 exists: at most one older file is kept")
			}
			for name, b := range map[string][]byte{"x.log.1": older, "x.log": newer} {
				if !bytes.HasPrefix(b, []byte(marker)) {
					t.Errorf("%s does not start with the marker: %.40q", name, b)
				}
			}
			all := strings.ReplaceAll(string(older)+string(newer), marker, "")
			got := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
			if len(got) < max/2/100 {
				t.Fatalf("the two files hold %d lines; want at least half the cap's worth", len(got))
			}
			first := lines - len(got)
			for i, line := range got {
				if want := fmt.Sprintf("line %06d ", first+i); !strings.HasPrefix(line, want) {
					t.Fatalf("line %d of the kept ones is %.20q, want it to start %q: the newest lines, whole and in order", i, line, want)
				}
			}
		})
	}
}

// TestNoMarkerBeforeAnythingIsDropped: the first rotation keeps all that
// was written, so neither file says anything was trimmed.
func TestNoMarkerBeforeAnythingIsDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l, err := Open(path, 100, []byte(marker), 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(bytes.Repeat([]byte("a"), 40))
	l.Write(bytes.Repeat([]byte("b"), 40)) // rotates: a... becomes x.log.1
	l.Close()
	older, newer := readBoth(t, path)
	if string(older) != strings.Repeat("a", 40) || string(newer) != strings.Repeat("b", 40) {
		t.Errorf("after one rotation: x.log.1 %q, x.log %q", older, newer)
	}
}

// TestReopenGoesOn: a log opened again counts the bytes already there.
func TestReopenGoesOn(t *testing.T) {
	const max = 1000
	path := filepath.Join(t.TempDir(), "x.log")
	os.WriteFile(path, bytes.Repeat([]byte("o"), 450), 0o600)
	l, err := Open(path, max, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(bytes.Repeat([]byte("n"), 100))
	l.Close()
	older, newer := readBoth(t, path)
	if len(older) != 450 || string(newer) != strings.Repeat("n", 100) {
		t.Errorf("reopened at 450 of 500 bytes, a 100-byte write: x.log.1 has %d bytes, x.log %q", len(older), newer)
	}
}

// TestDrainKeepsReading: Drain reads its input to the end even once the
// log cannot be written, so the writer at the other end never waits.
func TestDrainKeepsReading(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "console.log")
	l, err := Open(path, 8<<10, []byte(marker), 0)
	if err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Drain(r, l) }()
	chunk := bytes.Repeat([]byte("c"), 1000)
	for range 20 {
		w.Write(chunk)
	}
	// A directory where the older copy goes makes the next rotation fail.
	os.Remove(Older(path))
	os.Mkdir(Older(path), 0o700)
	os.WriteFile(filepath.Join(Older(path), "x"), nil, 0o600)
	for range 100 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatalf("a write to the console blocked or failed once the log could not rotate: %v", err)
		}
	}
	w.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "rotate") {
		t.Errorf("Drain returned %v, want the failed rotation", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() > 8<<10 {
		t.Errorf("console.log after the failed rotation: %v, %v", fi, err)
	}
}

func TestRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	os.WriteFile(path, nil, 0o600)
	os.WriteFile(Older(path), nil, 0o600)
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Errorf("removing what is gone: %v", err)
	}
	for _, p := range []string{path, Older(path)} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
}
