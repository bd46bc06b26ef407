//go:build linux

package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/tests/remotehosttest"
	"sandbar/vm"
	"sandbar/vm/libvirt"

	"golang.org/x/crypto/ssh"
)

// remoteBackend is the libvirt backend for a host from remotehosttest,
// logging in with the host's test key and trusting its key through a
// known_hosts file of the test's.
func remoteBackend(t *testing.T, h *remotehosttest.Host) *libvirt.Hypervisor {
	t.Helper()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(h.KnownHosts), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, err := libvirt.ParseTarget(h.URL())
	if err != nil {
		t.Fatal(err)
	}
	return libvirt.New(libvirt.Config{
		Name: "ns", Target: tg, Dir: h.Dir, Owner: "tests",
		Auth: libvirt.Auth{KnownHosts: kh, IdentityFiles: []string{h.IdentityFile}},
	})
}

// TestRemoteBoot: the real guest boots on the namespace host through
// libvirt over SSH and answers exec over the channel carried back; its
// scratch disk is made there; a second boot uploads nothing.
func TestRemoteBoot(t *testing.T) {
	img := guestImage(t)
	h := remotehosttest.Start(t)
	hv := remoteBackend(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st := hv.Check(ctx)
	if !st.Available {
		t.Fatalf("Check: %s", st.Detail)
	}
	t.Logf("host: %s", st.Detail)
	bootOnce := func(name string) *sandbox.Sandbox {
		dir := filepath.Join(t.TempDir(), name)
		start := time.Now()
		sb, err := sandbox.Boot(ctx, hv, img, sandbox.Options{Name: name, Dir: dir, CPUs: 1, Memory: 1024 * vm.MiB, ScratchSize: 1 << 30})
		if err != nil {
			t.Fatalf("boot on the host: %v", err)
		}
		t.Logf("%s: ready in %s (boot %s), %d bytes uploaded so far", name, time.Since(start).Round(time.Millisecond), sb.Booted.Round(time.Millisecond), hv.Uploaded())
		return sb
	}
	sb := bootOnce("sandbar-remote1")
	if out := run(t, sb, "", "sh", "-c", "echo hi > /tmp/x && cat /tmp/x && cat /sys/block/vdc/size"); !strings.HasPrefix(out, "hi\n") {
		t.Fatalf("exec on the remote VM: %q", out)
	}
	if len(h.QEMUs(t)) != 1 {
		t.Errorf("QEMU processes in the host's namespace: %v, want 1", h.QEMUs(t))
	}
	if out := h.In(t, "ls", h.Dir+"/vms/sandbar-remote1"); !strings.Contains(out, "disk2.qcow2") {
		t.Errorf("the scratch disk is not on the host: %s", out)
	}
	first := hv.Uploaded()
	if first == 0 {
		t.Fatal("the first boot uploaded nothing")
	}
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	if err := sb.Shutdown(sctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	scancel()
	sb2 := bootOnce("sandbar-remote2")
	defer sb2.Kill()
	if got := hv.Uploaded() - first; got != 0 {
		t.Errorf("the second boot uploaded %d bytes, want 0", got)
	}
	run(t, sb2, "", "true")
}

// remoteWorld is a world whose person has a home of their own (~/.ssh
// holding the host's test key) and the namespace host added as "ns".
func remoteWorld(t *testing.T) (*world, *remotehosttest.Host) {
	t.Helper()
	w := newWorld(t)
	h := remotehosttest.Start(t)
	home := filepath.Join(t.TempDir(), "person")
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	b, err := os.ReadFile(h.IdentityFile)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), b, 0o600)
	os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte(h.KnownHosts), 0o600)
	var env []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
			env = append(env, kv)
		}
	}
	w.env = append(env, "HOME="+home)
	w.ok("hosts", "add", "ns", h.URL(), "--dir", h.Dir)
	return w, h
}

// hostImages lists the host's cache of uploaded files with their
// modification times.
func hostImages(t *testing.T, h *remotehosttest.Host) string {
	// Names, sizes and times; not ls's block total, which moves as the
	// file system settles its allocation of files written just before.
	return h.In(t, "sh", "-c", "cd "+h.Dir+"/images && ls -l --time-style=+%s.%N | grep -v '^total'")
}

// TestRemoteSession: a session started --on the namespace host boots
// there (its QEMU in the host's namespaces, its scratch disk there),
// reaches system:ready and runs its agent; exec works over the channel
// carried back; ls says where it runs; a second session uploads nothing;
// the host cannot be removed while they run. A connection gone silent
// stops the domain there and interrupts the session here, and restart
// continues it on the host. An engine killed while its connection is
// silent (and the host's guard gone) leaves the domain running: the next
// engine ends it. The host can be removed once none runs.
func TestRemoteSession(t *testing.T) {
	w, h := remoteWorld(t)
	agent := `trap 'exit 143' TERM; while read -r line; do echo "heard: $line"; done`
	id := w.startID("--repo", w.repo, "--on", "ns", "--agent", agent, "--cpus", "1", "--memory", "512", "--disk", "1", "--no-network")
	w.waitState(id, "running")
	if got := w.ok("exec", id, "--", "cat", "README.md"); got != "# test\n" {
		t.Errorf("exec on the remote VM saw %q", got)
	}
	if q := h.QEMUs(t); len(q) != 1 {
		t.Errorf("QEMU processes in the host's namespaces: %v, want 1", q)
	}
	if out := h.In(t, "ls", h.Dir+"/vms/sandbar-"+id); !strings.Contains(out, "disk2.qcow2") {
		t.Errorf("the session's scratch disk is not on the host: %q", out)
	}
	if out := w.ok("ls"); !strings.Contains(out, "on ns") {
		t.Errorf("ls does not say where the session runs:\n%s", out)
	}
	images := hostImages(t, h)

	id2 := w.startID("--repo", w.repo, "--on", "ns", "--agent", agent, "--cpus", "1", "--memory", "512", "--disk", "1", "--no-network")
	w.waitState(id2, "running")
	if got := hostImages(t, h); got != images {
		t.Errorf("the second session uploaded to the host's cache:\nbefore:\n%s\nafter:\n%s", images, got)
	}
	_, errOut, code := w.run("", "hosts", "rm", "ns")
	if code == 0 || !strings.Contains(errOut, id) || !strings.Contains(errOut, id2) {
		t.Errorf("hosts rm with two sessions running there: exit %d, %q; want a refusal naming both", code, errOut)
	}
	w.ok("stop", id2)
	w.waitState(id2, "stopped")

	// The network to the host goes silent: the host's guard stops the
	// domain and Sandbar marks the session interrupted, each within the
	// 15 s bound (and the time to notice, under emulation).
	h.Cut(t)
	cut := time.Now()
	if !waitUntil(time.Minute, 200*time.Millisecond, func() bool { return len(h.QEMUs(t)) == 0 }) {
		t.Errorf("QEMU still runs on the host %s after its connection went silent: %v", time.Since(cut).Round(time.Second), h.QEMUs(t))
	}
	t.Logf("the host stopped the domain %s after the link went down", time.Since(cut).Round(100*time.Millisecond))
	s := w.waitState(id, "interrupted")
	t.Logf("the session was interrupted %s after the link went down: %s", time.Since(cut).Round(100*time.Millisecond), s.Reason)
	if !strings.Contains(s.Reason, "restart") {
		t.Errorf("the interrupted session's reason says nothing of restart: %q", s.Reason)
	}
	h.Mend(t)
	w.ok("restart", id)
	w.waitState(id, "running")
	if out := w.ok("ls"); !strings.Contains(out, "on ns") {
		t.Errorf("the restarted session does not run on the host:\n%s", out)
	}
	if got := w.ok("exec", id, "--", "cat", "README.md"); got != "# test\n" {
		t.Errorf("exec after the restart saw %q", got)
	}

	// The engine dies while its connection to the host is silent and the
	// host's guard could not run: the domain outlives it there. The next
	// engine finds it by the session's record and the host's own list
	// (vm.OrphanReaper), ends it, and marks the session interrupted.
	h.StopGuards(t)
	h.Silence(t)
	pid := w.enginePID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitOrFail(t, 10*time.Second, "the killed engine to exit", func() bool { return !running(pid) })
	if q := h.QEMUs(t); len(q) != 1 {
		t.Fatalf("the domain did not outlive the killed engine (the reaper then has nothing to find): QEMUs %v", q)
	}
	w.waitState(id, "interrupted")
	if !waitUntil(30*time.Second, 100*time.Millisecond, func() bool { return len(h.QEMUs(t)) == 0 }) {
		t.Errorf("the next engine left the VM the killed one left running on the host: %v", h.QEMUs(t))
	}
	ended := regexp.MustCompile(`ended an orphan VM.*session=` + id + `.*on="host ns"`)
	if !waitUntil(30*time.Second, 100*time.Millisecond, func() bool {
		b, _ := os.ReadFile(filepath.Join(w.home, "engine.log"))
		return ended.Match(b)
	}) {
		b, _ := os.ReadFile(filepath.Join(w.home, "engine.log"))
		t.Errorf("the engine's log does not say it ended the session's VM on the host:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(w.home, "sessions", id, libvirt.DomainFile)); !os.IsNotExist(err) {
		t.Errorf("the record of the ended domain is still there: %v", err)
	}
	w.ok("hosts", "rm", "ns")
}

// TestRemoteNetwork: a session on the namespace host has Sandbar's
// network through the tunnelled NIC: its egress rules, DNS and host
// mapping run on this machine, so an allowed name mapped to this
// machine's loopback (which the host itself cannot reach) answers, and a
// denied one is refused in the guest and listed by `sandbar net`.
func TestRemoteNetwork(t *testing.T) {
	w, _ := remoteWorld(t)
	allowed := serveLoopback(t, "hello from the person's machine")
	denied := serveLoopback(t, "denied")
	rules := fmt.Sprintf("host allowed.test 127.0.0.1\nhost denied.test 127.0.0.1\nallow allowed.test:%d\n", allowed.port)
	if out, errOut, code := w.run(rules, "net", "rules", "--set", "-"); code != 0 {
		t.Fatalf("net rules --set: %s %s", out, errOut)
	}
	id := w.startID("--repo", w.repo, "--on", "ns", "--agent", "sleep 3600", "--cpus", "1", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")
	if out, errOut, code := w.guestSh(id, fmt.Sprintf("curl -sS -m 30 http://allowed.test:%d/", allowed.port)); code != 0 || out != "hello from the person's machine" {
		diag, _, _ := w.guestSh(id, "ip addr; ip route; cat /etc/resolv.conf; cat /sys/class/net/*/statistics/rx_packets /sys/class/net/*/statistics/tx_packets")
		_, sys, _ := w.run("", "logs", id)
		t.Fatalf("the allowed host through the tunnel: %q %q exit %d\nguest network:\n%s\nlog:\n%s", out, errOut, code, diag, sys)
	}
	if out, errOut, code := w.guestSh(id, fmt.Sprintf("curl -sS -m 30 http://denied.test:%d/", denied.port)); code == 0 {
		t.Errorf("the denied host answered through the tunnel: %q %q", out, errOut)
	}
	if denied.conns.Load() != 0 {
		t.Errorf("the denied host got %d connections", denied.conns.Load())
	}
	target := fmt.Sprintf("denied.test:%d", denied.port)
	if !waitUntil(30*time.Second, 200*time.Millisecond, func() bool {
		return strings.Contains(w.ok("net", id), target)
	}) {
		t.Errorf("`sandbar net` does not list the denied %s:\n%s", target, w.ok("net", id))
	}
	w.ok("stop", id)
	w.waitState(id, "stopped")
}

// TestRemotePlacement: a session's limits are checked against the host
// it runs on, as that host's libvirt reports it (hosts of other sizes
// than this machine, through FakeMemory): one too large for the small
// host is refused naming it. --on auto places a session on the machine
// with the most free memory (the larger of two hosts here), says which
// and why in its log, and refuses, naming each machine, where none fits.
func TestRemotePlacement(t *testing.T) {
	w, small := remoteWorld(t)
	small.FakeMemory(t, 4<<30, 2<<30)
	big := remotehosttest.Start(t)
	big.FakeMemory(t, 512<<30, 256<<30)
	// The person's one key reaches both hosts.
	b, err := os.ReadFile(small.IdentityFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	big.Authorize(t, signer.PublicKey())
	var home string
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	kh, err := os.OpenFile(filepath.Join(home, ".ssh", "known_hosts"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	kh.WriteString(big.KnownHosts)
	kh.Close()
	w.ok("hosts", "add", "big", big.URL(), "--dir", big.Dir)

	args := func(on string, mib int) []string {
		return []string{"start", "--repo", w.repo, "--on", on, "--agent", "sleep 3600", "--cpus", "1", "--memory", fmt.Sprint(mib), "--disk", "1", "--no-network"}
	}
	// 2200 MiB is within the small host's budget (60% of 4 GiB), not
	// its free memory; this machine would hold it.
	if _, errOut, code := w.run("", args("ns", 2200)...); code == 0 || !strings.Contains(errOut, "host ns") || !strings.Contains(errOut, "2048 MiB free") {
		t.Errorf("a session of 2200 MiB on a host with 2 GiB free: exit %d, %q; want a refusal naming the host and its free memory", code, errOut)
	}
	if _, errOut, code := w.run("", args("ns", 3072)...); code == 0 || !strings.Contains(errOut, "host ns") || !strings.Contains(errOut, "of the 2457 MiB") {
		t.Errorf("a session of 3 GiB on a host whose budget is 2457 MiB: exit %d, %q; want a refusal naming the host and its budget", code, errOut)
	}
	if _, errOut, code := w.run("", args("auto", 1<<20)...); code == 0 || !strings.Contains(errOut, "this machine") || !strings.Contains(errOut, "host ns") || !strings.Contains(errOut, "host big") {
		t.Errorf("--on auto with 1 TiB: exit %d, %q; want a refusal naming each machine", code, errOut)
	}
	out := w.ok(args("auto", 512)...)
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "session" {
		t.Fatalf("start printed %q", out)
	}
	id := f[1]
	if ls := w.ok("ls"); !strings.Contains(ls, "on big") {
		t.Errorf("--on auto did not place the session on big (the most free memory):\n%s", ls)
	}
	w.waitLogWithin(id, "--on auto: running on host big, which has the most free memory", time.Minute)
	w.ok("stop", id)
	w.waitState(id, "stopped")
	if !waitUntil(30*time.Second, 100*time.Millisecond, func() bool { return len(big.QEMUs(t))+len(small.QEMUs(t)) == 0 }) {
		t.Errorf("QEMU still runs on a host after the session stopped: big %v, ns %v", big.QEMUs(t), small.QEMUs(t))
	}
}
