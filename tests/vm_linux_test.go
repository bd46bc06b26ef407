//go:build linux

// Package tests holds Sandbar's integration tests: real guests booted from
// the real image under QEMU (KVM where a trial boot proves it, emulation
// otherwise). They need the built image: `make test` builds it and passes
// its directory in SANDBAR_IMAGE_DIR; without it they skip, and -short
// skips them too.
//
// It is not where a package's own tests live (those sit beside their
// code), and it holds no helpers for other packages: the shared ones are
// its subpackages (anthropictest, keyringtest).
package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/guest/image"
	"sandbar/guest/protocol"
	"sandbar/tests/keyringtest"
	"sandbar/vm"
	"sandbar/vm/hostproc"
	"sandbar/vm/qemu"
)

var (
	hvOnce  sync.Once
	hv      *qemu.Hypervisor
	hvState string
	logOnce sync.Once
)

// guestImage returns the built image, skipping when there is none to use.
func guestImage(t *testing.T) *image.Image {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a real VM; skipped with -short")
	}
	dir := os.Getenv("SANDBAR_IMAGE_DIR")
	if dir == "" {
		t.Skip("SANDBAR_IMAGE_DIR is not set: run `make test`, which builds the guest image")
	}
	img, err := image.Latest(dir)
	if err != nil {
		t.Fatalf("SANDBAR_IMAGE_DIR=%s holds no usable image: %v (run `make image`)", dir, err)
	}
	return img
}

// hypervisor is one QEMU backend for the whole run, so the KVM trial
// happens once.
func hypervisor(t *testing.T, img *image.Image) *qemu.Hypervisor {
	hvOnce.Do(func() {
		d, err := os.MkdirTemp("", "sandbar-tests-state-")
		if err != nil {
			t.Fatal(err)
		}
		hvState = d
		hv = qemu.New(qemu.Config{
			StateDir:   d,
			Accel:      os.Getenv("SANDBAR_ACCEL"),
			TrialImage: func() (string, string, error) { return img.Kernel, img.Initramfs, nil },
		})
	})
	st := hv.Check(context.Background())
	if !st.Available {
		t.Fatalf("qemu unavailable: %s", st.Detail)
	}
	logOnce.Do(func() { fmt.Printf("tests: qemu: %s\n", st.Detail) })
	return hv
}

// TestMain runs the package inside a private D-Bus session with a real,
// unlocked gnome-keyring (see keyringtest), for the end-to-end tests.
func TestMain(m *testing.M) { keyringtest.Main(m) }

// boot boots a guest and stops it when the test ends.
func boot(t *testing.T, o sandbox.Options) *sandbox.Sandbox {
	t.Helper()
	img := guestImage(t)
	h := hypervisor(t, img)
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.CPUs == 0 {
		o.CPUs = 1
	}
	if o.Memory == 0 {
		o.Memory = 1024 * vm.MiB
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := sandbox.Boot(ctx, h, img, o)
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	t.Logf("ready in %s (%s, %d vCPUs, %d MiB)", sb.ReadyAfter.Round(time.Millisecond), sb.Ready.Kernel, sb.Ready.CPUs, sb.Ready.Memory/vm.MiB)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return sb
}

// run execs argv in the guest and returns its stdout, failing the test
// unless it exits 0.
func run(t *testing.T, sb *sandbox.Sandbox, user string, argv ...string) string {
	t.Helper()
	out, errOut, code := try(t, sb, user, argv...)
	if code != 0 {
		t.Fatalf("%q exited %d\nstdout: %s\nstderr: %s", argv, code, out, errOut)
	}
	return out
}

func try(t *testing.T, sb *sandbox.Sandbox, user string, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: argv, User: user}, &o, &e)
	if err != nil {
		t.Fatalf("exec %q: %v", argv, err)
	}
	return o.String(), e.String(), res.Code
}

// TestGuestBasics: ready arrives with the limits asked for, exec runs as
// the agent user and as root, the agent and the base tools work, and the
// shutdown is clean.
func TestGuestBasics(t *testing.T) {
	sb := boot(t, sandbox.Options{CPUs: 2, Memory: 1536 * vm.MiB})
	if sb.Ready.Version != protocol.Version || sb.Ready.CPUs != 2 || !strings.Contains(sb.Ready.Kernel, "amd64") {
		t.Errorf("system:ready = %+v", sb.Ready)
	}
	// The guest sees what it was given: 2 vCPUs, and 1536 MiB less what
	// the kernel keeps for itself.
	if got := strings.TrimSpace(run(t, sb, "", "nproc")); got != "2" {
		t.Errorf("nproc = %s, want 2", got)
	}
	memKiB := 0
	for _, l := range strings.Split(run(t, sb, "", "cat", "/proc/meminfo"), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			memKiB, _ = strconv.Atoi(f[1])
		}
	}
	if memKiB < 1300*1024 || memKiB > 1536*1024 {
		t.Errorf("MemTotal = %d KiB, want a little under 1536 MiB", memKiB)
	}
	if got := run(t, sb, "", "id", "-un"); got != "agent\n" {
		t.Errorf("default exec user = %q, want agent", got)
	}
	if got := run(t, sb, protocol.UserRoot, "id", "-u"); got != "0\n" {
		t.Errorf("root exec uid = %q", got)
	}
	if got := run(t, sb, "", "claude", "--version"); !strings.Contains(got, "Claude Code") {
		t.Errorf("claude --version = %q", got)
	}
	for _, tool := range [][]string{{"git", "--version"}, {"python3", "--version"}, {"node", "--version"}, {"rg", "--version"}, {"curl", "--version"}} {
		run(t, sb, "", tool...)
	}
	// The root is read-only underneath, writable through the overlay.
	run(t, sb, protocol.UserRoot, "sh", "-c", "echo hi > /etc/sandbar-test && grep -q hi /etc/sandbar-test")
	if _, _, code := try(t, sb, "", "sh", "-c", "echo x > /opt/agent/x"); code == 0 {
		t.Error("the agent disk is writable")
	}
	if sb.Client.SeqGaps() != 0 {
		t.Errorf("%d gaps in the event sequence", sb.Client.SeqGaps())
	}
}

// TestWorkspaceShare: the share is read-write for the guest and the host
// sees its writes at once; a path with spaces and non-ASCII works.
func TestWorkspaceShare(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "my repo – ünïcode")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "from host.txt"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	owner := asUser(t, ws)
	sb := boot(t, sandbox.Options{Share: ws})
	if got := run(t, sb, "", "cat", "/workspace/from host.txt"); got != "host" {
		t.Errorf("guest read %q", got)
	}
	run(t, sb, "", "sh", "-c", "mkdir -p /workspace/sub && echo guest > /workspace/sub/from-guest.txt")
	b, err := os.ReadFile(filepath.Join(ws, "sub", "from-guest.txt"))
	if err != nil || string(b) != "guest\n" {
		t.Errorf("host sees %q, %v", b, err)
	}
	// The agent runs as the workspace's owner, so what it makes is the
	// host user's.
	if got := run(t, sb, "", "id", "-u"); strings.TrimSpace(got) != strconv.Itoa(owner) {
		t.Errorf("agent uid = %s, want the workspace owner %d", got, owner)
	}
	if fi, err := os.Stat(filepath.Join(ws, "sub", "from-guest.txt")); err == nil {
		if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != owner {
			t.Errorf("guest-written file is owned by uid %d on the host, want %d", uid, owner)
		}
	}
}

// asUser makes dir look like a normal user's folder, as it is when Sandbar
// runs as that user: when the tests run as root (CI), the tree is given to
// uid 1000. It returns the owner.
func asUser(t *testing.T, dir string) int {
	t.Helper()
	if os.Getuid() != 0 {
		return os.Getuid()
	}
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 1000, 1000)
	})
	if err != nil {
		t.Fatal(err)
	}
	return 1000
}

// TestReadOnlyShare: a read-only share refuses writes and keeps the host's
// files as they were.
func TestReadOnlyShare(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("original"), 0o644)
	sb := boot(t, sandbox.Options{Share: ws, ShareReadOnly: true})
	if got := run(t, sb, "", "cat", "/workspace/keep.txt"); got != "original" {
		t.Errorf("guest read %q", got)
	}
	for _, argv := range [][]string{
		{"sh", "-c", "echo x > /workspace/new.txt"},
		{"sh", "-c", "echo changed > /workspace/keep.txt"},
		{"rm", "/workspace/keep.txt"},
	} {
		if _, errOut, code := try(t, sb, protocol.UserRoot, argv...); code == 0 {
			t.Errorf("%q succeeded on a read-only share", argv)
		} else if !strings.Contains(strings.ToLower(errOut), "read-only") {
			t.Logf("%q: %s", argv, errOut)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "keep.txt")); string(b) != "original" {
		t.Errorf("host file is now %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err == nil {
		t.Error("new.txt appeared on the host")
	}
}

// TestScratchSurvivesReboot: what the guest writes outside the workspace
// lands on the session's scratch disk and is there at the next boot of the
// same session; without a scratch disk it is gone.
func TestScratchSurvivesReboot(t *testing.T) {
	dir := t.TempDir()
	o := sandbox.Options{Dir: dir, ScratchSize: 2 << 30}
	img := guestImage(t)
	h := hypervisor(t, img)
	ctx := context.Background()

	sb, err := sandbox.Boot(ctx, h, img, o)
	if err != nil {
		t.Fatal(err)
	}
	run(t, sb, protocol.UserRoot, "sh", "-c", "echo kept > /var/tmp/persist && mkdir -p /home/agent/cache && echo 1 > /home/agent/cache/x")
	if err := sb.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, sandbox.ScratchFile))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	t.Logf("scratch disk: %d bytes apparent, %d KiB allocated", fi.Size(), st.Blocks/2)
	if fi.Size() != 2<<30 || st.Blocks*512 > 200<<20 {
		t.Errorf("scratch disk is not a sparse 2 GiB file: size %d, allocated %d", fi.Size(), st.Blocks*512)
	}

	sb = boot(t, o)
	if got := run(t, sb, "", "cat", "/var/tmp/persist"); got != "kept\n" {
		t.Errorf("after reboot /var/tmp/persist = %q", got)
	}
	// The guest must have found the disk clean at mount: the kernel warns
	// "mounting unchecked fs" or "recovery" otherwise.
	dmesg := run(t, sb, protocol.UserRoot, "dmesg")
	if !strings.Contains(dmesg, "EXT4-fs (vdc)") {
		t.Errorf("dmesg shows no mount of the scratch disk:\n%s", dmesg)
	}
	for _, bad := range []string{"unchecked", "recovery", "errors"} {
		for _, l := range strings.Split(dmesg, "\n") {
			if strings.Contains(l, "vdc") && strings.Contains(l, bad) {
				t.Errorf("scratch disk not clean after the previous power-off: %s", l)
			}
		}
	}

	// A guest without a scratch disk forgets.
	sb2 := boot(t, sandbox.Options{})
	if _, _, code := try(t, sb2, "", "test", "-e", "/var/tmp/persist"); code == 0 {
		t.Error("/var/tmp/persist exists in a fresh guest")
	}
}

// TestNetwork: off means no route and no NIC; on gives a default route
// through QEMU's gateway (no outside network is needed to see that).
func TestNetwork(t *testing.T) {
	off := boot(t, sandbox.Options{})
	if got := run(t, off, "", "ls", "/sys/class/net"); strings.TrimSpace(got) != "lo" {
		t.Errorf("network off: interfaces %q, want only lo", got)
	}
	if got := run(t, off, "", "cat", "/proc/net/route"); strings.Count(strings.TrimSpace(got), "\n") != 0 {
		t.Errorf("network off: routes\n%s", got)
	}
	if _, _, code := try(t, off, "", "curl", "-sS", "-m", "3", "http://10.0.2.2/"); code == 0 {
		t.Error("network off: curl reached the gateway")
	}

	on := boot(t, sandbox.Options{Network: true})
	routes := run(t, on, "", "cat", "/proc/net/route")
	if !strings.Contains(routes, "00000000") || !strings.Contains(routes, "0202000A") {
		t.Errorf("network on: no default route via 10.0.2.2:\n%s", routes)
	}
	if got := run(t, on, "", "cat", "/etc/resolv.conf"); !strings.Contains(got, "10.0.2.3") {
		t.Errorf("resolv.conf = %q", got)
	}
}

// TestBootTimeoutShowsConsole: a guest that never gets ready is stopped at
// the deadline and the error carries the console's last lines. The root
// disk is pointed at a device that does not exist, so init waits for it.
func TestBootTimeoutShowsConsole(t *testing.T) {
	img := guestImage(t)
	h := hypervisor(t, img)
	dir := t.TempDir()
	start := time.Now()
	_, err := sandbox.Boot(context.Background(), h, img, sandbox.Options{
		Dir: dir, CPUs: 1, Memory: 512 * vm.MiB, ReadyTimeout: 4 * time.Second,
		KernelArgs: []string{"sandbar.root=/dev/vdz"},
	})
	if !errors.Is(err, vm.ErrBootTimeout) {
		t.Fatalf("err = %v, want ErrBootTimeout", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("timing out took %s", took)
	}
	// The error carries whatever the console had when the guest was
	// stopped (a loaded machine may not have reached init in 4 s; the
	// in-process test in app/sandbox checks the tail itself).
	if tail := sandbox.ConsoleTail(filepath.Join(dir, sandbox.ConsoleFile), 20); tail != "" && !strings.Contains(err.Error(), tail) {
		t.Errorf("error lacks the console tail %q:\n%v", tail, err)
	}
	t.Logf("error:\n%v", err)
	if n := qemuUnder(dir); n != 0 {
		t.Errorf("%d qemu processes left after the timeout", n)
	}
}

// qemuUnder counts live qemu processes whose command line mentions dir.
func qemuUnder(dir string) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte("qemu-system")) || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); bytes.Contains(st, []byte(") Z ")) {
			continue // a zombie is already dead
		}
		n++
	}
	return n
}

// TestKillParentLeavesNoQEMU: kill -9 of the process that booted a VM
// takes the VM with it. The parent is this test binary, re-run in a mode
// that boots a guest and waits.
func TestKillParentLeavesNoQEMU(t *testing.T) {
	img := guestImage(t)
	hypervisor(t, img) // settle the KVM verdict before the child needs it
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperParent$", "-test.v")
	// SANDBAR_KEYRING_SESSION=child: keyringtest runs the child's tests
	// as they are, in this process's D-Bus session.
	cmd.Env = append(os.Environ(), "SANDBAR_TEST_PARENT_DIR="+dir, "SANDBAR_TEST_PARENT_STATE="+hvState, "SANDBAR_KEYRING_SESSION=child")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := 0
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(3*time.Minute, func() { cmd.Process.Kill() })
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "QEMU_PID="); ok {
			pid, _ = strconv.Atoi(v)
			break
		}
	}
	deadline.Stop()
	if pid == 0 {
		cmd.Wait()
		t.Fatal("the child never reported a booted VM")
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("qemu pid %d is not running: %v", pid, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// A QEMU on its way out has no cmdline any more (qemuUnder stops
	// seeing it) while it still frees its memory: it has died once its
	// pid is gone or a zombie.
	if !waitUntil(5*time.Second, 50*time.Millisecond, func() bool { return qemuUnder(dir) == 0 && !hostproc.Running(pid, 0) }) {
		t.Fatalf("qemu (pid %d) outlived its parent's kill -9", pid)
	}
	// The pid file is left for a restarted Sandbar; ending the orphan is a
	// no-op now that it is gone, and must not touch another process.
	if killed, err := hypervisor(t, img).ReapOrphan(context.Background(), dir); err != nil || killed {
		t.Errorf("ReapOrphan after the VM died = %v, %v", killed, err)
	}
}

// TestHelperParent is the child of TestKillParentLeavesNoQEMU.
func TestHelperParent(t *testing.T) {
	dir := os.Getenv("SANDBAR_TEST_PARENT_DIR")
	if dir == "" {
		t.Skip("helper process for TestKillParentLeavesNoQEMU")
	}
	img := guestImage(t)
	h := qemu.New(qemu.Config{StateDir: os.Getenv("SANDBAR_TEST_PARENT_STATE"), Accel: os.Getenv("SANDBAR_ACCEL"),
		TrialImage: func() (string, string, error) { return img.Kernel, img.Initramfs, nil }})
	sb, err := sandbox.Boot(context.Background(), h, img, sandbox.Options{Dir: dir, CPUs: 1, Memory: 512 * vm.MiB})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("QEMU_PID=%d\n", sb.PID())
	// Not a wait for anything: this process holds its VM until the parent
	// test kills it, which is the point; 5 minutes bounds an orphan if the
	// parent never does.
	time.Sleep(5 * time.Minute)
}
