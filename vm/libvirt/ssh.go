package libvirt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Target is where a host is: ssh://user@host[:port].
type Target struct {
	User string
	Host string
	Port int
}

// ParseTarget reads ssh://user@host[:port]; the user defaults to this
// machine's, the port to 22.
func ParseTarget(s string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "ssh" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return Target{}, fmt.Errorf("%q is not a host address: write ssh://user@host or ssh://user@host:port", s)
	}
	if _, set := u.User.Password(); set {
		return Target{}, fmt.Errorf("%q holds a password: Sandbar logs in with your SSH agent or keys, never a password; write ssh://user@host", redactURL(u))
	}
	t := Target{User: u.User.Username(), Host: u.Hostname(), Port: 22}
	if t.User == "" {
		me, err := user.Current()
		if err != nil {
			return Target{}, fmt.Errorf("%q names no user and this machine's is unknown (%v): write ssh://user@host", s, err)
		}
		t.User = me.Username
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("%q: port %q is not a port number (1–65535)", s, p)
		}
		t.Port = n
	}
	return t, nil
}

func redactURL(u *url.URL) string {
	c := *u
	c.User = url.User(u.User.Username())
	return c.String()
}

// Addr is host:port.
func (t Target) Addr() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

func (t Target) String() string {
	if t.Port == 22 {
		return "ssh://" + t.User + "@" + t.Host
	}
	return "ssh://" + t.User + "@" + t.Addr()
}

// Auth is how Sandbar logs in, as ssh does: the SSH agent, then the
// person's own unencrypted keys, checking the host against known_hosts.
type Auth struct {
	// AgentSocket is the SSH agent's socket (SSH_AUTH_SOCK); "" for none.
	AgentSocket string
	// KnownHosts is the known_hosts file (~/.ssh/known_hosts).
	KnownHosts string
	// IdentityFiles are private keys tried after the agent's
	// (~/.ssh/id_ed25519, id_ecdsa, id_rsa); missing ones are skipped.
	IdentityFiles []string
}

// DefaultAuth is ssh's defaults under home.
func DefaultAuth(home, agentSocket string) Auth {
	d := filepath.Join(home, ".ssh")
	return Auth{
		AgentSocket:   agentSocket,
		KnownHosts:    filepath.Join(d, "known_hosts"),
		IdentityFiles: []string{filepath.Join(d, "id_ed25519"), filepath.Join(d, "id_ecdsa"), filepath.Join(d, "id_rsa")},
	}
}

// UnknownHostError is a host whose key known_hosts does not hold.
type UnknownHostError struct {
	Host        string
	Fingerprint string // SHA256:...
	Key         ssh.PublicKey
}

func (e *UnknownHostError) Error() string {
	return fmt.Sprintf("the host key of %s is not in your known_hosts (its key is %s %s): check that fingerprint on the host (`ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub`), then add it with `sandbar hosts add ... --trust %s` or by logging in once with ssh",
		e.Host, e.Key.Type(), e.Fingerprint, strings.TrimPrefix(keyFileKind(e.Key.Type()), "ssh-"), e.Fingerprint)
}

func keyFileKind(t string) string {
	switch {
	case strings.Contains(t, "ed25519"):
		return "ed25519"
	case strings.Contains(t, "ecdsa"):
		return "ecdsa"
	}
	return "rsa"
}

// ChangedHostKeyError is a host whose key is not the one known_hosts
// holds for it: someone may be in the middle, or the host was rebuilt.
type ChangedHostKeyError struct {
	Host        string
	Fingerprint string
	KnownHosts  string
	Line        int
}

func (e *ChangedHostKeyError) Error() string {
	return fmt.Sprintf("the host key of %s CHANGED: it is now %s, not the one at %s line %d; someone may be intercepting the connection. Sandbar refused to connect. If the host was reinstalled, check the new fingerprint on it, remove the old line with `ssh-keygen -R %s`, and add the host again",
		e.Host, e.Fingerprint, e.KnownHosts, e.Line, e.Host)
}

// ErrUnreachable: no SSH server answered at the host's address.
var ErrUnreachable = errors.New("host unreachable")

// ErrAuth: the host refused every key offered.
var ErrAuth = errors.New("the host refused the login")

// dialTimeout bounds the TCP connect and the SSH handshake.
const dialTimeout = 15 * time.Second

// Dial logs in to t as ssh would. trust, when not "", is a fingerprint
// the person confirmed for a host not yet in known_hosts: a key of that
// fingerprint is accepted and written to known_hosts.
func Dial(ctx context.Context, t Target, a Auth, trust string) (*ssh.Client, error) {
	hostKey, err := hostKeyCallback(t, a, trust)
	if err != nil {
		return nil, err
	}
	methods, closeAgent, err := authMethods(a)
	if err != nil {
		return nil, err
	}
	defer closeAgent()
	cfg := &ssh.ClientConfig{
		User: t.User, Auth: methods, HostKeyCallback: hostKey, Timeout: dialTimeout,
		HostKeyAlgorithms: knownAlgorithms(a.KnownHosts, t),
	}
	// AES-GCM first: with the CPU's AES instructions it carries the
	// image upload several times faster than ChaCha20.
	cfg.Ciphers = []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes128-ctr", "aes256-ctr"}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", t.Addr())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %v: check the address, that the host is on and that sshd runs there: %w", t.Addr(), err, ErrUnreachable)
	}
	conn.SetDeadline(time.Now().Add(dialTimeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, t.Addr(), cfg)
	if err != nil {
		conn.Close()
		var uk *UnknownHostError
		var ck *ChangedHostKeyError
		switch {
		case errors.As(err, &uk):
			return nil, uk
		case errors.As(err, &ck):
			return nil, ck
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, fmt.Errorf("log in to %s as %s: no key was accepted (tried %s): add your public key to ~%s/.ssh/authorized_keys there, or load the right key into your SSH agent with ssh-add: %w",
				t.Addr(), t.User, describe(methods, a), t.User, ErrAuth)
		}
		return nil, fmt.Errorf("SSH handshake with %s: %w", t.Addr(), err)
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

func describe(methods []ssh.AuthMethod, a Auth) string {
	var have []string
	if a.AgentSocket != "" {
		have = append(have, "the SSH agent's keys")
	}
	for _, f := range a.IdentityFiles {
		if _, err := os.Stat(f); err == nil {
			have = append(have, f)
		}
	}
	if len(have) == 0 {
		return "none: no SSH agent and no key in ~/.ssh"
	}
	return strings.Join(have, ", ")
}

// knownAlgorithms asks the host for a key of a type known_hosts already
// holds for it, so that a host with several keys is not reported
// changed because it offered another type first.
func knownAlgorithms(file string, t Target) []string {
	cb, err := knownhosts.New(file)
	if err != nil {
		return nil
	}
	// A probe key that matches nothing makes the callback list the
	// known keys of this host.
	err = cb(t.Addr(), &net.TCPAddr{}, probeKey{})
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		return nil
	}
	var algs []string
	for _, k := range ke.Want {
		switch k.Key.Type() {
		case ssh.KeyAlgoRSA:
			algs = append(algs, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			algs = append(algs, k.Key.Type())
		}
	}
	return algs
}

// probeKey is a key no host has.
type probeKey struct{}

func (probeKey) Type() string                        { return "sandbar-probe" }
func (probeKey) Marshal() []byte                     { return []byte("sandbar-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe key") }

func hostKeyCallback(t Target, a Auth, trust string) (ssh.HostKeyCallback, error) {
	if a.KnownHosts == "" {
		return nil, errors.New("no known_hosts file: Sandbar checks every host's key against ~/.ssh/known_hosts")
	}
	if _, err := os.Stat(a.KnownHosts); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(a.KnownHosts), 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", filepath.Dir(a.KnownHosts), err)
		}
		if err := os.WriteFile(a.KnownHosts, nil, 0o600); err != nil {
			return nil, fmt.Errorf("create %s: %w", a.KnownHosts, err)
		}
	}
	known, err := knownhosts.New(a.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("read %s: %v: fix or move that file", a.KnownHosts, err)
	}
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := known(hostname, remote, key)
		var ke *knownhosts.KeyError
		if err == nil || !errors.As(err, &ke) {
			return err
		}
		fp := ssh.FingerprintSHA256(key)
		if len(ke.Want) > 0 {
			return &ChangedHostKeyError{Host: t.Host, Fingerprint: fp, KnownHosts: ke.Want[0].Filename, Line: ke.Want[0].Line}
		}
		if trust == "" || trust != fp {
			return &UnknownHostError{Host: t.Addr(), Fingerprint: fp, Key: key}
		}
		line := knownhosts.Line([]string{knownhosts.Normalize(t.Addr())}, key)
		f, err := os.OpenFile(a.KnownHosts, os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("add the host's key to %s: %w", a.KnownHosts, err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			return fmt.Errorf("add the host's key to %s: %w", a.KnownHosts, err)
		}
		return nil
	}, nil
}

// authMethods are the agent's keys, then the identity files that parse
// without a passphrase; the returned func closes the agent's socket.
func authMethods(a Auth) ([]ssh.AuthMethod, func(), error) {
	var methods []ssh.AuthMethod
	closer := func() {}
	if a.AgentSocket != "" {
		if c, err := net.Dial("unix", a.AgentSocket); err == nil {
			ag := agent.NewClient(c)
			methods = append(methods, ssh.PublicKeysCallback(ag.Signers))
			closer = func() { c.Close() }
		}
	}
	var signers []ssh.Signer
	for _, f := range a.IdentityFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s, err := ssh.ParsePrivateKey(b)
		if err != nil {
			// A key with a passphrase is the agent's to hold.
			continue
		}
		signers = append(signers, s)
	}
	if len(signers) > 0 {
		methods = append(methods, ssh.PublicKeys(signers...))
	}
	return methods, closer, nil
}
