package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/sandbox"
	"sandbar/guest/protocol"
)

// TestCaptureAPreparedEnvironment: a machine changes its root (a file
// added, one removed, a folder replaced, a setuid program) and powers
// off; a capture machine copies those changes onto a new disk; two new
// machines boot on it, each under its own layer, and find the changes,
// and what one writes the other never sees.
func TestCaptureAPreparedEnvironment(t *testing.T) {
	img := guestImage(t)
	h := hypervisor(t, img)
	ctx := context.Background()
	prepDir := t.TempDir()
	sb, err := sandbox.Boot(ctx, h, img, sandbox.Options{Dir: prepDir, ScratchSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	run(t, sb, protocol.UserRoot, "sh", "-c", `set -e
mkdir -p /opt/prepared && echo ready > /opt/prepared/marker
rm /etc/issue
rm -rf /usr/share/doc && mkdir /usr/share/doc && echo only > /usr/share/doc/only
mkdir -p /usr/local/bin && cp /bin/true /usr/local/bin/suid-true && chmod 4755 /usr/local/bin/suid-true
mkdir -p /.sandbar-prepare`)
	if err := sb.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "env.img")
	c, err := sandbox.Capture(ctx, h, img, sandbox.CaptureOptions{Dir: t.TempDir(), Scratch: filepath.Join(prepDir, sandbox.ScratchFile), Out: out, Size: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("captured %d files, %d bytes in %s", c.Files, c.Bytes, c.Took)
	if c.Files < 5 {
		t.Errorf("captured %d files, want at least the 5 made", c.Files)
	}

	var sbs []*sandbox.Sandbox
	for range 2 {
		sbs = append(sbs, boot(t, sandbox.Options{Dir: t.TempDir(), ScratchSize: 1 << 30, Env: out}))
	}
	for i, sb := range sbs {
		got := run(t, sb, "", "sh", "-c", `cat /opt/prepared/marker; test -e /etc/issue && echo issue; ls /usr/share/doc; stat -c %a /usr/local/bin/suid-true; test -e /.sandbar-prepare && echo prepdir; true`)
		if want := "ready\nonly\n4755\n"; got != want {
			t.Errorf("machine %d on the prepared disk: %q, want %q", i, got, want)
		}
	}
	run(t, sbs[0], protocol.UserRoot, "sh", "-c", "echo mine > /opt/prepared/marker")
	if got := run(t, sbs[1], "", "cat", "/opt/prepared/marker"); got != "ready\n" {
		t.Errorf("one machine's write reached the other: %q", got)
	}
	if fi, err := os.Stat(out); err != nil || !strings.HasSuffix(out, ".img") || fi.Size() != 1<<30 {
		t.Errorf("the prepared disk: %v, %v", fi, err)
	}
}
