//go:build linux

package remotehosttest

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestHost: sshd takes the user's key and the host's libvirtd answers
// through it.
func TestHost(t *testing.T) {
	start := time.Now()
	h := Start(t)
	t.Logf("host up in %s", time.Since(start).Round(time.Millisecond))
	b, err := os.ReadFile(h.IdentityFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", h.Addr, &ssh.ClientConfig{
		User: h.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(h.HostKey), Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.CombinedOutput("virsh -c qemu:///system list --all --name && echo ok")
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("virsh over ssh: %v\n%s", err, out)
	}
}

// TestFakeMemory: libvirt on the host reports the memory FakeMemory
// gives it, total and free.
func TestFakeMemory(t *testing.T) {
	h := Start(t)
	h.FakeMemory(t, 64<<30, 40<<30)
	if out := h.In(t, "virsh", "-c", "qemu:///system", "nodeinfo"); !strings.Contains(out, "67108864 KiB") {
		t.Errorf("virsh nodeinfo does not say 64 GiB:\n%s", out)
	}
	if out := h.In(t, "virsh", "-c", "qemu:///system", "freecell", "--all"); !strings.Contains(out, "41943040 KiB") {
		t.Errorf("virsh freecell does not say 40 GiB free:\n%s", out)
	}
}
