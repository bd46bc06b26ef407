//go:build linux

package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/config"
	"sandbar/app/engine"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/guest/image"
	"sandbar/vm/hostproc"
	"sandbar/vm/qemu"
)

// TestOrphanVMReaped: a Sandbar killed while a session ran, on a system
// where nothing kills its QEMU with it (macOS has no parent-death signal;
// here qemu.Config.NoParentDeath starts QEMU that way), leaves the VM
// running. The next Sandbar's engine, opened on the same data directory,
// ends exactly that QEMU, by its pid file, and marks the session
// interrupted.
//
// The owner is this test binary, re-run as TestHelperOrphanOwner: it
// starts a real session through session.Manager and waits. A guest whose
// host channel closes powers off by itself (its supervisor takes EOF as
// a shutdown); the orphans reaping is for are guests that do not (hung,
// or hostile). So QEMU is frozen (SIGSTOP) before the owner is killed:
// still a live process, which a parent-death signal would have ended.
func TestOrphanVMReaped(t *testing.T) {
	img := guestImage(t)
	hv := hypervisor(t, img) // settle the KVM verdict before the owner needs it
	root := t.TempDir()
	paths := orphanPaths(root, img)
	repo := filepath.Join(root, "repo")
	os.MkdirAll(repo, 0o755)
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// A QEMU of no session of this Sandbar (another's, say): recovery
	// must leave it be.
	bystander := exec.Command(copyAs(t, "sleep", "qemu-system-x86_64"), "300")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bystander.Process.Kill(); bystander.Wait() }()

	owner := exec.Command(os.Args[0], "-test.run=^TestHelperOrphanOwner$", "-test.v")
	owner.Env = append(os.Environ(), "SANDBAR_TEST_ORPHAN_ROOT="+root, "SANDBAR_TEST_ORPHAN_REPO="+repo,
		"SANDBAR_TEST_PARENT_STATE="+hvState, "SANDBAR_KEYRING_SESSION=child")
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	owner.Stderr = os.Stderr
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { owner.Process.Kill(); owner.Wait() }()
	id := ownerSession(t, owner, out)

	vmDir := paths.Session(id)
	q := recordedQEMU(t, vmDir)
	t.Cleanup(func() { // should recovery not have
		if hostproc.Running(q.PID, q.Start) {
			syscall.Kill(q.PID, syscall.SIGKILL)
		}
	})
	if err := syscall.Kill(q.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	owner.Wait()
	// Nothing ended QEMU with its owner.
	if !hostproc.Running(q.PID, q.Start) {
		t.Fatalf("qemu %d died with its owner although it was started without a parent-death signal", q.PID)
	}

	st, err := store.Open(paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := session.New(ctx, session.Config{Paths: paths, Store: st, Secrets: noSecrets{}, Hypervisor: hv,
		Image: func(context.Context) (*image.Image, error) { return img, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	// Recovery is the engine's: it runs once this process holds the lock.
	e, err := engine.Listen(ctx, paths, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	waitOrFail(t, 10*time.Second, fmt.Sprintf("recovery to end the orphan qemu %d", q.PID),
		func() bool { return !hostproc.Running(q.PID, q.Start) })
	if !hostproc.Running(bystander.Process.Pid, 0) {
		t.Errorf("recovery ended another qemu-system process (%d), not of this session", bystander.Process.Pid)
	}
	if _, err := os.Stat(filepath.Join(vmDir, qemu.PIDFile)); !os.IsNotExist(err) {
		t.Errorf("the orphan's pid file is still there: %v", err)
	}
	s, err := m.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != session.StateInterrupted || !strings.Contains(s.Reason, "restart") {
		t.Errorf("after recovery the session is %s (%q), want %s with a word on restarting", s.State, s.Reason, session.StateInterrupted)
	}
}

// TestHelperOrphanOwner is the owner process of TestOrphanVMReaped: it
// starts a session whose QEMU has no parent-death signal, says which
// once it runs, and waits to be killed.
func TestHelperOrphanOwner(t *testing.T) {
	root := os.Getenv("SANDBAR_TEST_ORPHAN_ROOT")
	if root == "" {
		t.Skip("helper process for TestOrphanVMReaped")
	}
	img := guestImage(t)
	paths := orphanPaths(root, img)
	st, err := store.Open(paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	hv := qemu.New(qemu.Config{StateDir: os.Getenv("SANDBAR_TEST_PARENT_STATE"), Accel: os.Getenv("SANDBAR_ACCEL"),
		TrialImage: func() (string, string, error) { return img.Kernel, img.Initramfs, nil }, NoParentDeath: true})
	if hv.Info().Features.DiesWithOwner {
		t.Fatal("NoParentDeath: the backend still says its VMs die with their owner")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := session.New(ctx, session.Config{Paths: paths, Store: st, Secrets: noSecrets{}, Hypervisor: hv,
		Image: func(context.Context) (*image.Image, error) { return img, nil }})
	if err != nil {
		t.Fatal(err)
	}
	events := m.Subscribe(ctx, "")
	s, err := m.Start(ctx, session.Options{Repo: os.Getenv("SANDBAR_TEST_ORPHAN_REPO"), CPUs: 1, MemoryMiB: 512, DiskGiB: 1,
		NoNetwork: true, Agent: session.AgentSpec{Command: "sleep", Args: []string{"600"}}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Session != s.ID || ev.Kind != session.EventState {
			continue
		}
		switch ev.State {
		case session.StateRunning:
			fmt.Printf("SESSION=%s\n", s.ID)
			<-ctx.Done() // until killed
			return
		case session.StateFailed, session.StateStopped:
			t.Fatalf("the session ended before it ran: %s: %s", ev.State, ev.Reason)
		}
	}
	t.Fatal("no running session within 5 minutes")
}

// ownerSession waits, boundedly, for the owner to say which session runs.
func ownerSession(t *testing.T, owner *exec.Cmd, out io.Reader) string {
	t.Helper()
	deadline := time.AfterFunc(3*time.Minute, func() { owner.Process.Kill() })
	defer deadline.Stop()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "SESSION="); ok {
			go io.Copy(io.Discard, out) // the rest of its output, until it dies
			return id
		}
	}
	t.Fatal("the owner never reported a running session (killed after 3 minutes, or it failed: see its output above)")
	return ""
}

// recordedQEMU is the running QEMU that vmDir's pid file names.
func recordedQEMU(t *testing.T, vmDir string) hostproc.Process {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vmDir, qemu.PIDFile))
	if err != nil {
		t.Fatalf("no pid file in the VM's directory (the one recovery reads): %v", err)
	}
	f := strings.Fields(string(b))
	pid, _ := strconv.Atoi(f[0])
	p, err := hostproc.Lookup(pid)
	if err != nil || !strings.HasPrefix(p.Name, "qemu-system") || strconv.FormatInt(p.Start, 10) != f[1] {
		t.Fatalf("the pid file says %q; the system says %+v, %v", b, p, err)
	}
	return p
}

func orphanPaths(root string, img *image.Image) config.Paths {
	return config.Paths{Home: filepath.Join(root, "home"), Images: filepath.Dir(img.Dir), Downloads: filepath.Join(root, "dl")}
}

// copyAs copies the program prog (found on PATH) to a temp dir under name,
// so that the system reports its process under that name.
func copyAs(t *testing.T, prog, name string) string {
	t.Helper()
	src, err := exec.LookPath(prog)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// waitOrFail fails t unless cond holds within d, asking every 10 ms.
func waitOrFail(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			if !cond() {
				t.Fatalf("waited %s for %s", d, what)
			}
			return
		case <-tick.C:
		}
	}
}

// noSecrets: the sessions' agent is a plain command that needs none.
type noSecrets struct{}

func (noSecrets) Names(context.Context) ([]string, error) { return nil, nil }
func (noSecrets) Env(context.Context, []string) (map[string]string, error) {
	return map[string]string{}, nil
}
