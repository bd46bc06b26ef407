//go:build linux

package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"sandbar/tests/remotehosttest"
)

// hostsUser is a person with a home of their own (~/.ssh), running the
// real sandbar binary against a data directory of their own.
type hostsUser struct {
	t    *testing.T
	bin  string
	home string
	env  []string
}

func newHostsUser(t *testing.T, identity string) *hostsUser {
	t.Helper()
	root := t.TempDir()
	u := &hostsUser{t: t, bin: sandbarBin(t), home: filepath.Join(root, "home")}
	os.MkdirAll(filepath.Join(u.home, ".ssh"), 0o700)
	if identity != "" {
		b, err := os.ReadFile(identity)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(u.home, ".ssh", "id_ed25519"), b, 0o600)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "SSH_AUTH_SOCK=") && !strings.HasPrefix(kv, "SANDBAR_HOME=") {
			u.env = append(u.env, kv)
		}
	}
	u.env = append(u.env, "HOME="+u.home, "SANDBAR_HOME="+filepath.Join(root, "data"))
	return u
}

func (u *hostsUser) sandbar(args ...string) (stdout, stderr string, err error) {
	u.t.Helper()
	cmd := exec.Command(u.bin, args...)
	cmd.Env = u.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func (u *hostsUser) knownHosts() string {
	b, _ := os.ReadFile(filepath.Join(u.home, ".ssh", "known_hosts"))
	return string(b)
}

// TestHostsAdd: `sandbar hosts add` logs in as ssh does. An unknown host
// key is refused with its fingerprint and what to do, and taken once the
// person confirms that fingerprint (then kept in known_hosts); a changed
// host key, a key the host refuses and an address nothing answers at are
// each refused in words, and nothing is recorded; the host is checked
// (libvirt, no KVM here: a warning) and listed; `hosts prune` lists and
// removes what no session owns there; `hosts rm` forgets it.
func TestHostsAdd(t *testing.T) {
	h := remotehosttest.Start(t)
	u := newHostsUser(t, h.IdentityFile)
	fp := ssh.FingerprintSHA256(h.HostKey)

	_, errOut, err := u.sandbar("hosts", "add", "ns", h.URL(), "--dir", h.Dir)
	if err == nil || !strings.Contains(errOut, "not in your known_hosts") || !strings.Contains(errOut, fp) || !strings.Contains(errOut, "--trust "+fp) {
		t.Fatalf("unknown host key: err %v, stderr %q: want a refusal naming %s and --trust", err, errOut, fp)
	}
	if _, _, err := u.sandbar("hosts", "add", "ns", h.URL(), "--trust", "SHA256:not-its-key"); err == nil {
		t.Fatal("a wrong fingerprint given to --trust was taken")
	}
	if u.knownHosts() != "" {
		t.Fatalf("known_hosts was written before the person confirmed the key: %q", u.knownHosts())
	}
	out, errOut, err := u.sandbar("hosts", "add", "ns", h.URL(), "--dir", h.Dir, "--trust", fp)
	if err != nil {
		t.Fatalf("hosts add --trust: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "added ns") || !strings.Contains(out, "libvirt 9.") {
		t.Errorf("hosts add said %q", out)
	}
	if !strings.Contains(errOut, "no usable KVM") {
		t.Errorf("no warning about KVM (this machine has none usable): %q", errOut)
	}
	if kh := u.knownHosts(); !strings.Contains(kh, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(h.HostKey)))) {
		t.Errorf("known_hosts lacks the confirmed key: %q", kh)
	}
	out, _, err = u.sandbar("hosts")
	if err != nil || !strings.Contains(out, "ns") || !strings.Contains(out, h.URL()) || !strings.Contains(out, "ready:") {
		t.Errorf("hosts: %v\n%s", err, out)
	}
	if out, errOut, err := u.sandbar("hosts", "check", "ns"); err != nil || !strings.Contains(out, "ready") {
		t.Errorf("hosts check: %v\n%s%s", err, out, errOut)
	}

	// The same address under another name, with known_hosts holding
	// another key for it: someone in the middle, or a rebuilt host.
	other := newHostsUser(t, h.IdentityFile)
	otherKey := remotehosttest.NewKey(t)
	os.WriteFile(filepath.Join(other.home, ".ssh", "known_hosts"), []byte(strings.Split(h.Addr, ":")[0]+" "+string(ssh.MarshalAuthorizedKey(otherKey))), 0o600)
	_, errOut, err = other.sandbar("hosts", "add", "ns", h.URL(), "--trust", fp)
	if err == nil || !strings.Contains(errOut, "CHANGED") || !strings.Contains(errOut, "ssh-keygen -R") {
		t.Errorf("changed host key: err %v, stderr %q", err, errOut)
	}

	// A person whose key the host does not know.
	stranger := newHostsUser(t, "")
	os.WriteFile(filepath.Join(stranger.home, ".ssh", "known_hosts"), []byte(h.KnownHosts), 0o600)
	_, errOut, err = stranger.sandbar("hosts", "add", "ns", h.URL())
	if err == nil || !strings.Contains(errOut, "no key was accepted") {
		t.Errorf("refused key: err %v, stderr %q", err, errOut)
	}
	// Nothing answers there.
	_, errOut, err = stranger.sandbar("hosts", "add", "gone", "ssh://root@127.0.0.1:1")
	if err == nil || !strings.Contains(errOut, "sshd runs there") {
		t.Errorf("unreachable host: err %v, stderr %q", err, errOut)
	}
	if out, _, _ := stranger.sandbar("hosts"); !strings.Contains(out, "no remote hosts") {
		t.Errorf("a refused host was recorded: %q", out)
	}

	// A VM's folder no session here owns (one deleted for good) is
	// listed by prune, and removed only with --yes.
	left := filepath.Join(h.Dir, "vms", "sandbar-deadbeef00")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(left, "disk2.qcow2"), []byte("x"), 0o600)
	out, errOut, err = u.sandbar("hosts", "prune", "ns")
	if err != nil || !strings.Contains(out, "left over sandbar-deadbeef00: its folder") {
		t.Errorf("hosts prune: %v\n%s%s", err, out, errOut)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("prune without --yes removed the folder: %v", err)
	}
	out, errOut, err = u.sandbar("hosts", "prune", "ns", "--yes")
	if err != nil || !strings.Contains(out, "removed sandbar-deadbeef00") {
		t.Errorf("hosts prune --yes: %v\n%s%s", err, out, errOut)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("prune --yes left the folder: %v", err)
	}

	if out, errOut, err := u.sandbar("hosts", "rm", "ns"); err != nil || !strings.Contains(out, "removed ns") {
		t.Errorf("hosts rm: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := u.sandbar("hosts", "rm", "ns"); err == nil || !strings.Contains(errOut, "no host named ns") {
		t.Errorf("second hosts rm: %v %q", err, errOut)
	}
}
