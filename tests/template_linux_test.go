//go:build linux

package tests

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/guest/image"
	"sandbar/vm"
)

// workspaceDisk writes a read-only ext4 workspace disk whose clone holds
// one file, who, saying name.
func workspaceDisk(t *testing.T, path, name string) {
	t.Helper()
	err := image.TarToExt4(path, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		for _, d := range []string{"repo/"} {
			if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Now()}); err != nil {
				return err
			}
		}
		body := name + "\n"
		if err := tw.WriteHeader(&tar.Header{Name: "repo/who", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: time.Now()}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return err
		}
		return tw.Close()
	})
	if err != nil {
		t.Fatalf("workspace disk: %v", err)
	}
}

// TestTemplate: an image booted once to sandbar-init's wait point and
// saved as a template starts two VMs, each to system:ready, that are not
// copies of each other: they draw different random bytes, have different
// machine-ids, show the host's time (not the template's), and each has
// its own disks (its own workspace's file, its own scratch disk, which
// it formatted). A VM of another shape, and a damaged template, boot
// cold and say why.
func TestTemplate(t *testing.T) {
	img := guestImage(t)
	h := hypervisor(t, img)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := t.TempDir()
	tdir := filepath.Join(root, "template")
	start := time.Now()
	if err := sandbox.SaveTemplate(ctx, h, img, tdir); err != nil {
		t.Fatalf("save the template: %v", err)
	}
	t.Logf("template saved in %s", time.Since(start).Round(time.Millisecond))
	// The template is older than the VMs started from it: their clocks
	// must be the host's when they start, not the template's.
	time.Sleep(2 * time.Second)

	type vmInfo struct{ random, machineID, who string }
	boot := func(name string) (*sandbox.Sandbox, vmInfo, sandbox.Options) {
		t.Helper()
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o700)
		ws := filepath.Join(dir, "workspace.ext4")
		workspaceDisk(t, ws, name)
		host, guest, _, err := sandbox.NICPair(h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { host.Close(); guest.Close() })
		o := sandbox.Options{
			Dir: dir, ScratchSize: 1 << 30, Workspace: ws, Template: tdir,
			NIC:    &vm.NIC{File: guest, MAC: []byte{0x02, 0, 0, 0, 0, byte(len(name))}, MTU: 1500},
			NICArg: "static:10.0.2.15/24,10.0.2.2,10.0.2.3",
		}
		sb, err := sandbox.Boot(ctx, h, img, o)
		if err != nil {
			t.Fatalf("%s: start: %v", name, err)
		}
		t.Cleanup(func() { sb.Kill(); sb.Wait(context.Background()) })
		if !sb.FromTemplate {
			t.Fatalf("%s did not start from the template: %s\nconsole:\n%s", name, sb.TemplateNote, sandbox.ConsoleTail(filepath.Join(dir, "console.log"), 30))
		}
		t.Logf("%s: %s", name, sb.TemplateNote)
		now := time.Now().Unix()
		guestNow, err := strconv.ParseInt(strings.TrimSpace(run(t, sb, "", "date", "+%s")), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if d := now - guestNow; d > 2 || d < -2 {
			t.Errorf("%s: the guest's clock is %d s off the host's: it kept the template's", name, d)
		}
		// Its own scratch disk: formatted by this VM, and written to.
		run(t, sb, "", "sh", "-c", "echo "+name+" > ~/mine && sync")
		return sb, vmInfo{
			random:    run(t, sb, "", "sh", "-c", "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'"),
			machineID: strings.TrimSpace(run(t, sb, "", "cat", "/etc/machine-id")),
			who:       strings.TrimSpace(run(t, sb, "", "sh", "-c", "cat /workspace/who 2>/dev/null || find /workspace -maxdepth 2")),
		}, o
	}
	sbA, a, optsA := boot("a")
	_, b, _ := boot("bb")
	if a.random == b.random || len(a.random) != 64 {
		t.Errorf("both VMs drew the same random bytes (%s, %s): the RNG was not reseeded", a.random, b.random)
	}
	if a.machineID == b.machineID || len(a.machineID) != 32 {
		t.Errorf("machine-ids %q and %q: want two different ones", a.machineID, b.machineID)
	}
	if a.who != "a" || b.who != "bb" {
		t.Errorf("workspaces say %q and %q: want each VM's own (a, bb)", a.who, b.who)
	}

	// A VM started from a template suspends whole and resumes as any
	// other: its RAM is its own, not the template's file.
	state := filepath.Join(root, "a", "vm.state")
	if err := sbA.Suspend(ctx, state); err != nil {
		t.Fatalf("suspend a VM started from the template: %v", err)
	}
	sbA.Wait(ctx)
	optsA.Template = ""
	sbA, err := sandbox.Resume(ctx, h, img, optsA, state)
	if err != nil {
		t.Fatalf("resume a VM started from the template: %v", err)
	}
	if id := strings.TrimSpace(run(t, sbA, "", "cat", "/etc/machine-id")); id != a.machineID {
		t.Errorf("after its resume the VM's machine-id is %q, was %q", id, a.machineID)
	}
	sbA.Kill()
	sbA.Wait(context.Background())

	// Another shape boots cold, and says why.
	dir := filepath.Join(root, "big")
	sb, err := sandbox.Boot(ctx, h, img, sandbox.Options{Dir: dir, CPUs: 1, Memory: 1024 * vm.MiB, Template: tdir})
	if err != nil {
		t.Fatalf("cold boot of another shape: %v", err)
	}
	sb.Kill()
	sb.Wait(context.Background())
	if sb.FromTemplate || !strings.Contains(sb.TemplateNote, "vCPUs differ from the template's 2") {
		t.Errorf("a 1-vCPU VM: note %q, from template %v; want a cold boot saying the vCPUs differ", sb.TemplateNote, sb.FromTemplate)
	}
	t.Logf("another shape: %s", sb.TemplateNote)

	// A truncated template is refused before QEMU starts.
	if err := os.Truncate(filepath.Join(tdir, "state"), 100); err != nil {
		t.Fatal(err)
	}
	_, err = h.BootFromTemplate(ctx, vm.Spec{}, tdir)
	if !errors.Is(err, vm.ErrBadState) {
		t.Errorf("a truncated template: %v, want vm.ErrBadState", err)
	}
	var ti map[string]any
	b2, _ := os.ReadFile(filepath.Join(tdir, "template.json"))
	if json.Unmarshal(b2, &ti) != nil {
		t.Errorf("template.json is not JSON: %s", b2)
	}
}
