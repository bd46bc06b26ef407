package libvirt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket/dialers"
	"golang.org/x/crypto/ssh"

	"sandbar/vm"
)

// libvirtSockets are where the system libvirtd listens (Debian links
// /var/run to /run; another system may have only one).
var libvirtSockets = []string{"/run/libvirt/libvirt-sock", "/var/run/libvirt/libvirt-sock"}

// conn is one SSH connection to a host and the libvirt RPC over it.
type conn struct {
	t   Target
	ssh *ssh.Client
	lv  *golibvirt.Libvirt

	closeOnce sync.Once
}

// connect logs in and opens libvirt's system connection through the SSH
// connection (a forwarded unix socket: nothing listens on the network).
func connect(ctx context.Context, t Target, a Auth, trust string) (*conn, error) {
	c, err := Dial(ctx, t, a, trust)
	if err != nil {
		return nil, err
	}
	var sock net.Conn
	var derr error
	for _, p := range libvirtSockets {
		if sock, derr = c.Dial("unix", p); derr == nil {
			break
		}
	}
	if derr != nil {
		c.Close()
		return nil, fmt.Errorf("reach libvirt on %s (%s): %v: install libvirt-daemon-system there and start libvirtd, and let %s use it (root, or the libvirt group): %w",
			t.Host, libvirtSockets[0], derr, t.User, ErrNoLibvirt)
	}
	lv := golibvirt.NewWithDialer(dialers.NewAlreadyConnected(sock))
	if err := lv.ConnectToURI(golibvirt.QEMUSystem); err != nil {
		sock.Close()
		c.Close()
		return nil, fmt.Errorf("open libvirt's qemu:///system on %s: %v: let %s use it (root, or the libvirt group): %w", t.Host, err, t.User, ErrNoLibvirt)
	}
	return &conn{t: t, ssh: c, lv: lv}, nil
}

// ErrNoLibvirt: the host has no libvirt this user can use.
var ErrNoLibvirt = errors.New("no usable libvirt on the host")

// Close closes the SSH connection first: libvirt's goodbye would wait
// forever on a connection gone silent, and the host ends the domains this
// connection started once it closes, either way.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.ssh.Close()
		c.lv.Disconnect()
	})
	return nil
}

// rpcTimeout bounds one libvirt call on a running VM's connection.
const rpcTimeout = 20 * time.Second

// call runs a libvirt call with a bound: go-libvirt's calls take no
// context, and one on a connection gone silent never returns. On timeout
// the connection is closed, which ends the domain (autodestroy).
func (c *conn) call(fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(rpcTimeout):
		c.Close()
		return fmt.Errorf("libvirt on %s did not answer within %s: %w", c.t.Host, rpcTimeout, vm.ErrHostLost)
	}
}

// runMax caps what a command on the host may print back.
const runMax = 1 << 20

// run runs a shell command on the host, stdin feeding it, and returns
// its output (at most runMax bytes).
func (c *conn) run(ctx context.Context, cmd string, stdin io.Reader) (string, error) {
	s, err := c.ssh.NewSession()
	if err != nil {
		return "", fmt.Errorf("run on %s: %w", c.t.Host, err)
	}
	defer s.Close()
	var out, errb capped
	out.max, errb.max = runMax, 8<<10
	s.Stdout, s.Stderr, s.Stdin = &out, &errb, stdin
	if err := s.Start(cmd); err != nil {
		return "", fmt.Errorf("run on %s: %w", c.t.Host, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Signal(ssh.SIGKILL)
		s.Close()
		<-done
		return "", ctx.Err()
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s on %s: %v: %s", firstWord(cmd), c.t.Host, err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

// capped keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// shq quotes s for the host's POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
