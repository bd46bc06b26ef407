//go:build linux

// Package remotehosttest makes a remote KVM host for the remote hosts'
// tests out of real parts on this machine: a network namespace joined to
// this one by a veth pair, and inside it a real sshd (with test keys) and
// a real libvirtd and virtlogd, in a mount namespace of their own so
// that their state (/run/libvirt, /var/lib/libvirt, /etc/libvirt) is the
// test's and not this machine's. It is for tests only, needs root, and
// skips otherwise (fails under CI, where the tests run as root).
package remotehosttest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Host is a running host: sshd on Addr (port 22), libvirtd beside it.
type Host struct {
	// Addr is the host's address as seen from this machine.
	Addr string
	// User is the SSH user (root).
	User string
	// HostKey is sshd's public key; KnownHosts a known_hosts line for it.
	HostKey    ssh.PublicKey
	KnownHosts string
	// IdentityFile is the user's private key (OpenSSH format, no
	// passphrase), which sshd accepts.
	IdentityFile string
	// Dir is a directory on the host (in its private mount namespace)
	// for Sandbar's files there.
	Dir string
	// PID is the namespaces' holder: nsenter -t PID -m -n runs a command
	// on the host.
	PID int
	// link is this machine's end of the veth pair.
	link string
	// authKeys is sshd's authorized_keys file.
	authKeys string
}

// Authorize lets key log in too (another host's test key, for one
// person's ~/.ssh that reaches two hosts).
func (h *Host) Authorize(t testing.TB, key ssh.PublicKey) {
	t.Helper()
	appendFile(t, h.authKeys, string(ssh.MarshalAuthorizedKey(key)))
}

// Cut takes this machine's end of the link down: every connection to
// the host goes silent, as a sleeping laptop's or a dropped network's
// does (nothing is closed).
func (h *Host) Cut(t testing.TB) { t.Helper(); run(t, "ip", "link", "set", h.link, "down") }

// Mend brings the link back up.
func (h *Host) Mend(t testing.TB) { t.Helper(); run(t, "ip", "link", "set", h.link, "up") }

// URL is the host's ssh:// address.
func (h *Host) URL() string { return "ssh://" + h.User + "@" + strings.TrimSuffix(h.Addr, ":22") }

// Need skips (fails under CI) unless this process is root and the tools
// are installed.
func Need(t testing.TB) {
	t.Helper()
	miss := func(msg string) {
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if os.Geteuid() != 0 {
		miss("the remote host's tests make network namespaces: run them as root")
	}
	for tool, pkg := range map[string]string{
		"/usr/sbin/sshd": "openssh-server", "/usr/sbin/libvirtd": "libvirt-daemon-system",
		"/usr/sbin/virtlogd": "libvirt-daemon-system", "qemu-img": "qemu-utils",
		"unshare": "util-linux", "nsenter": "util-linux", "ip": "iproute2",
	} {
		if _, err := exec.LookPath(tool); err != nil {
			miss(fmt.Sprintf("%s is not installed: apt-get install %s (scripts/install-deps.sh does)", tool, pkg))
		}
	}
}

// Start makes a host; t.Cleanup stops each of its processes by pid.
func Start(t testing.TB) *Host {
	t.Helper()
	Need(t)
	dir := t.TempDir()
	// Short: the VMs' sockets live under it, and a unix socket's path
	// has room for 107 bytes.
	hd, err := os.MkdirTemp("", "sbh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hd) })
	h := &Host{User: "root", Dir: hd}

	// The host's own network, mount and pid namespaces. Its init is a
	// bash that reaps whatever is orphaned there: libvirtd daemonizes the
	// QEMU it probes, and kills it by waiting for it to vanish, which a
	// zombie nobody reaps never does (40 s per probe otherwise).
	holder := exec.Command("unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "private",
		"--", "bash", "-c", "while :; do sleep 86400 & wait $!; done")
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	// Killing the namespace's init (by pid, through unshare's
	// --kill-child) ends every process of the host.
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	waitFor(t, 5*time.Second, "the namespaces", func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", holder.Process.Pid, holder.Process.Pid))
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return false
		}
		h.PID, _ = strconv.Atoi(f[0])
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", h.PID))
		return strings.HasSuffix(l, "/bash")
	})

	// A /30 of 10.213.0.0/16 that no other test of this run uses: the
	// veth's name and the subnet come from the holder's pid.
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<14))
	sub := int(n.Int64())
	hostIP := fmt.Sprintf("10.213.%d.%d", sub>>6, (sub&63)*4+1)
	nsIP := fmt.Sprintf("10.213.%d.%d", sub>>6, (sub&63)*4+2)
	outer, inner := fmt.Sprintf("sbh%d", h.PID), fmt.Sprintf("sbn%d", h.PID)
	h.link = outer
	run(t, "ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
	t.Cleanup(func() { exec.Command("ip", "link", "del", outer).Run() })
	run(t, "ip", "link", "set", inner, "netns", fmt.Sprint(h.PID))
	run(t, "ip", "addr", "add", hostIP+"/30", "dev", outer)
	run(t, "ip", "link", "set", outer, "up")
	h.in(t, "ip", "link", "set", "lo", "up")
	h.in(t, "ip", "addr", "add", nsIP+"/30", "dev", inner)
	h.in(t, "ip", "link", "set", inner, "up")
	h.Addr = nsIP + ":22"

	// The daemons' state, private to the mount namespace.
	etc := filepath.Join(dir, "etc-libvirt")
	run(t, "cp", "-a", "/etc/libvirt", etc)
	// Without user = "root" libvirtd runs QEMU as libvirt-qemu and, on a
	// host whose /dev/kvm it cannot use, re-probes QEMU at every start
	// (about 92 s each here).
	appendFile(t, filepath.Join(etc, "qemu.conf"), "user = \"root\"\ngroup = \"root\"\ndynamic_ownership = 0\nremember_owner = 0\n")
	// /run whole: the daemons' pid files are there, and another test's
	// host may run beside this one.
	for _, d := range []string{"/run", "/var/lib/libvirt", "/var/log/libvirt", "/var/cache/libvirt"} {
		h.in(t, "mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", d)
	}
	h.in(t, "mkdir", "-p", "/run/libvirt", "/run/sshd")
	h.in(t, "mount", "--bind", etc, "/etc/libvirt")
	// This machine's /dev/kvm opens but hangs whoever uses it (QEMU sits
	// unkillable for 40 s; libvirtd's capability probe does that once per
	// QEMU binary, minutes in all). The host is one without KVM: its
	// /dev/kvm answers no KVM ioctl, as on a machine without nested
	// virtualization, and libvirt offers TCG at once.
	if _, err := os.Stat("/dev/kvm"); err == nil {
		h.in(t, "mount", "--bind", "/dev/null", "/dev/kvm")
	}
	if err := os.MkdirAll(h.Dir, 0o700); err != nil {
		t.Fatal(err)
	}

	// Keys: sshd's host key and the user's.
	hostKey := writeKey(t, filepath.Join(dir, "ssh_host_ed25519_key"))
	userKey := writeKey(t, filepath.Join(dir, "id_ed25519"))
	h.IdentityFile = filepath.Join(dir, "id_ed25519")
	h.HostKey = hostKey
	h.KnownHosts = nsIP + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hostKey))) + "\n"
	auth := filepath.Join(dir, "authorized_keys")
	h.authKeys = auth
	if err := os.WriteFile(auth, ssh.MarshalAuthorizedKey(userKey), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress %s
HostKey %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
MaxSessions 64
LogLevel ERROR
`, h.Addr, filepath.Join(dir, "ssh_host_ed25519_key"), auth)), 0o600); err != nil {
		t.Fatal(err)
	}

	h.daemon(t, "virtlogd", filepath.Join(dir, "virtlogd.log"), "/usr/sbin/virtlogd")
	h.daemon(t, "libvirtd", filepath.Join(dir, "libvirtd.log"), "/usr/sbin/libvirtd")
	h.daemon(t, "sshd", filepath.Join(dir, "sshd.log"), "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	waitFor(t, 20*time.Second, "libvirtd's socket", func() bool {
		return exec.Command("nsenter", "-t", fmt.Sprint(h.PID), "-m", "-n", "test", "-S", "/run/libvirt/libvirt-sock").Run() == nil
	})
	waitFor(t, 10*time.Second, "sshd on "+h.Addr, func() bool {
		c, err := net.DialTimeout("tcp", h.Addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return h
}

// In runs a command on the host (in its namespaces) and returns its output.
func (h *Host) In(t testing.TB, args ...string) string {
	t.Helper()
	return h.in(t, args...)
}

func (h *Host) in(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, "nsenter", append([]string{"-t", fmt.Sprint(h.PID), "-m", "-n", "--"}, args...)...)
}

// daemon runs one of the host's daemons in the foreground, logging to
// logFile, and stops it by pid at cleanup (before the holder: cleanups
// run in reverse).
func (h *Host) daemon(t testing.TB, name, logFile string, args ...string) {
	t.Helper()
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", append([]string{"-t", fmt.Sprint(h.PID), "-m", "-n", "-p", "--"}, args...)...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	lf.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// nsenter forked the daemon into the pid namespace and waits
		// for it: the daemon is nsenter's child, stopped by its pid.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			if b, _ := os.ReadFile(logFile); len(b) > 0 {
				t.Logf("%s's log:\n%s", name, tail(b, 4<<10))
			}
		}
	})
	select {
	case <-exited:
		b, _ := os.ReadFile(logFile)
		t.Fatalf("%s exited at once: %s", name, b)
	case <-time.After(50 * time.Millisecond):
	}
}

// QEMUs lists the pids of the QEMU processes running on the host.
func (h *Host) QEMUs(t testing.TB) []string {
	t.Helper()
	return h.procs(t, "^/usr/bin/qemu-system")
}

// FakeMemory makes the host's kernel files say it has total bytes of
// memory, free of them free (bind mounts over /proc/meminfo and each NUMA
// node's meminfo in its mount namespace), which is what libvirt's node
// info reports: hosts of other sizes than this machine, for placement.
// QEMU there is unaffected.
func (h *Host) FakeMemory(t testing.TB, total, free uint64) {
	t.Helper()
	dir := t.TempDir()
	kb := func(b uint64) uint64 { return b >> 10 }
	mi := filepath.Join(dir, "meminfo")
	if err := os.WriteFile(mi, []byte(fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nBuffers:               0 kB\nCached:                0 kB\n",
		kb(total), kb(free), kb(free))), 0o644); err != nil {
		t.Fatal(err)
	}
	h.in(t, "mount", "--bind", mi, "/proc/meminfo")
	nodes, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	for i, n := range nodes {
		// The first node holds it all, as a one-node machine's does.
		nt, nf := total, free
		if i > 0 {
			nt, nf = 0, 0
		}
		f := filepath.Join(dir, filepath.Base(n)+"-meminfo")
		id := strings.TrimPrefix(filepath.Base(n), "node")
		if err := os.WriteFile(f, []byte(fmt.Sprintf("Node %s MemTotal:       %d kB\nNode %s MemFree:        %d kB\nNode %s MemUsed:        %d kB\n",
			id, kb(nt), id, kb(nf), id, kb(nt-nf))), 0o644); err != nil {
			t.Fatal(err)
		}
		h.in(t, "mount", "--bind", f, n+"/meminfo")
	}
}

// Silence makes every SSH connection open to the host now go silent,
// both ways, while the link stays up for new ones: as a connection whose
// far end vanished without a word (a machine that crashed while its
// network was down). The host keeps such a connection, and what hangs on
// it, until something of its own notices.
func (h *Host) Silence(t testing.TB) {
	t.Helper()
	out := h.in(t, "ss", "-Htn", "state", "established", "( sport = :22 )")
	n := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		_, port, err := net.SplitHostPort(f[len(f)-1])
		if err != nil {
			t.Fatalf("ss printed %q", l)
		}
		h.in(t, "iptables", "-I", "INPUT", "-p", "tcp", "--dport", "22", "--sport", port, "-j", "DROP")
		h.in(t, "iptables", "-I", "OUTPUT", "-p", "tcp", "--sport", "22", "--dport", port, "-j", "DROP")
		n++
	}
	if n == 0 {
		t.Fatal("Silence: no SSH connection to the host is open")
	}
}

// StopGuards kills the guard Sandbar runs on the host beside each VM
// (the shell that ends the domain when the heartbeat stops), as on a
// host where it could not start.
func (h *Host) StopGuards(t testing.TB) {
	t.Helper()
	pids := h.procs(t, "virsh -q -c qemu:///system destroy")
	if len(pids) == 0 {
		t.Fatal("StopGuards: no guard runs on the host")
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitFor(t, 10*time.Second, "the guards to end", func() bool { return len(h.procs(t, "virsh -q -c qemu:///system destroy")) == 0 })
}

// procs lists the pids of the host's processes whose command line
// matches pattern (pgrep -f).
func (h *Host) procs(t testing.TB, pattern string) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", pattern).Output()
	var pids []string
	for _, p := range strings.Fields(string(out)) {
		ns, _ := os.Readlink("/proc/" + p + "/ns/net")
		mine, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", h.PID))
		if ns != "" && ns == mine {
			pids = append(pids, p)
		}
	}
	return pids
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func writeKey(t testing.TB, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		t.Fatal(err)
	}
	return sp
}

func appendFile(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func waitFor(t testing.TB, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come up within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// NewKey is a fresh ed25519 public key, one no host has.
func NewKey(t testing.TB) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
