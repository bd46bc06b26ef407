package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"sandbar/guest/image/download"
)

// npmTarball makes a .tgz laid out like an npm platform package.
func npmTarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range []string{"package/package.json", "package/claude", "package/README.md"} {
		body, ok := files[name]
		if !ok {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sri512(b []byte) string {
	sum := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// serveNPM serves tgz at the registry path of @test/agent-linux 1.2.3.
func serveNPM(t *testing.T, tgz []byte) (string, *atomic.Int32) {
	t.Helper()
	hits := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/@test/agent-linux/-/agent-linux-1.2.3.tgz" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.Write(tgz)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

func TestAgentDisk(t *testing.T) {
	binary := "#!/bin/sh\necho claude\n" + strings.Repeat("x", 100_000)
	tgz := npmTarball(t, map[string]string{
		"package/package.json": `{"name":"@test/agent-linux"}`,
		"package/claude":       binary,
		"package/README.md":    "readme",
	})
	registry, hits := serveNPM(t, tgz)
	spec := AgentSpec{Package: "@test/agent-linux", Version: "1.2.3", Integrity: sri512(tgz), Binary: "package/claude"}
	cache := &download.Cache{Dir: t.TempDir()}
	ctx := context.Background()

	path, err := fetchAgent(ctx, cache, registry, spec)
	if err != nil {
		t.Fatalf("fetchAgent: %v", err)
	}

	t.Run("tar layout", func(t *testing.T) {
		var buf bytes.Buffer
		n, err := writeAgentTar(ctx, &buf, path, spec)
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(len(binary)) {
			t.Errorf("binary size %d, want %d", n, len(binary))
		}
		got := map[string]string{}
		modes := map[string]int64{}
		tr := tar.NewReader(&buf)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			got[hdr.Name] = string(b)
			modes[hdr.Name] = hdr.Mode
		}
		if len(got) != 3 {
			t.Errorf("agent disk holds %v, want bin/, bin/claude and VERSION only", keys(got))
		}
		if got[AgentBinary] != binary || modes[AgentBinary] != 0o755 {
			t.Errorf("bin/claude: %d bytes mode %o, want %d bytes mode 755", len(got[AgentBinary]), modes[AgentBinary], len(binary))
		}
		if got["VERSION"] != "1.2.3\n" {
			t.Errorf("VERSION = %q", got["VERSION"])
		}
	})

	t.Run("ext4", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), AgentFile)
		if err := TarToExt4(out, func(w io.Writer) error {
			_, err := writeAgentTar(ctx, w, path, spec)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		debugfs, err := exec.LookPath("debugfs")
		if err != nil {
			t.Skip("no debugfs to look inside the image")
		}
		cmd := exec.Command(debugfs, "-R", "cat /bin/claude", out)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("debugfs: %v", err)
		}
		if string(b) != binary {
			t.Errorf("bin/claude inside agent.ext4 differs: %d bytes", len(b))
		}
		checkExt4(t, out)
	})

	t.Run("cached", func(t *testing.T) {
		before := hits.Load()
		if _, err := fetchAgent(ctx, cache, registry, spec); err != nil {
			t.Fatal(err)
		}
		if hits.Load() != before {
			t.Errorf("second fetch went to the registry")
		}
	})

	t.Run("errors", func(t *testing.T) {
		bad := spec
		bad.Integrity = sri512([]byte("something else"))
		if _, err := fetchAgent(ctx, &download.Cache{Dir: t.TempDir()}, registry, bad); err == nil {
			t.Error("fetchAgent accepted a tarball that does not match its integrity")
		}
		missing := spec
		missing.Binary = "package/nope"
		_, err := writeAgentTar(ctx, io.Discard, path, missing)
		if err == nil || !strings.Contains(err.Error(), "package/nope") {
			t.Errorf("writeAgentTar(missing binary) = %v, want an error naming it", err)
		}
		if _, err := fetchAgent(ctx, cache, registry, AgentSpec{Package: "../x", Version: "1", Integrity: spec.Integrity}); err == nil {
			t.Error("fetchAgent accepted a bad package name")
		}
	})
}

// checkExt4 runs e2fsck -fn on img when e2fsck is installed. It forgives
// the one flaw hcsshim's writer always leaves, unset padding bits at the
// end of the inode bitmap, which neither the kernel nor a read-only mount
// reads.
func checkExt4(t *testing.T, img string) {
	t.Helper()
	fsck, err := exec.LookPath("e2fsck")
	if err != nil {
		t.Log("no e2fsck: ext4 image not checked")
		return
	}
	out, err := exec.Command(fsck, "-fn", img).CombinedOutput()
	if err == nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "Fix? no") && !strings.HasPrefix(line, "Padding at end of inode bitmap is not set") {
			t.Errorf("e2fsck %s: %s\n%s", filepath.Base(img), line, out)
			return
		}
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestDefaultAgent(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		a := DefaultAgent(arch)
		if !strings.HasPrefix(a.Package, "@anthropic-ai/claude-code-linux-") || a.Version == "" || a.Binary != "package/claude" {
			t.Errorf("DefaultAgent(%s) = %+v", arch, a)
		}
		if _, err := download.ParseSRI(a.Integrity); err != nil {
			t.Errorf("DefaultAgent(%s) integrity: %v", arch, err)
		}
	}
	if DefaultAgent("riscv64") != (AgentSpec{}) {
		t.Error("DefaultAgent(riscv64) is not empty")
	}
}
