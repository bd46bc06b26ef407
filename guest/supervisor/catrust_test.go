package supervisor

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/guest/protocol"
)

// testCA returns a fresh self-signed CA certificate in PEM.
func testCA(t testing.TB, name string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// execEnv returns the environment an exec sees.
func (h *host) execEnv(id string) map[string]string {
	h.t.Helper()
	out, _, res := h.execOutput(protocol.Command{ID: id, Argv: []string{"env"}})
	if res.Code != 0 {
		h.t.Fatalf("env: %+v", res)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	return env
}

func (h *host) startCA(id, script, ca string) protocol.Event {
	h.t.Helper()
	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: id, CACert: ca,
		Agent: &protocol.Agent{Command: "sh", Args: []string{"-c", script}}})
	return h.next()
}

func TestStartTrustsCA(t *testing.T) {
	h := newHost(t)
	ca := testCA(t, "Sandbar CA one")
	if ev := h.startCA("s1", `echo "node=$NODE_EXTRA_CA_CERTS ssl=$SSL_CERT_FILE"`, ca); ev.Ev != protocol.EvAgentStarted {
		t.Fatalf("start with a CA: %+v", ev)
	}
	want := origBundle + caBegin + ca + caEnd
	if got := readFile(t, h.caBundle); got != want {
		t.Fatalf("bundle after start:\n%s\nwant the original and the CA:\n%s", got, want)
	}
	if got := readFile(t, h.caFile); got != ca {
		t.Fatalf("%s holds %q, want the CA", h.caFile, got)
	}
	h.waitLine("node=" + h.caFile + " ssl=" + h.caBundle)
	h.until(protocol.EvAgentExit, "")

	env := h.execEnv("env1")
	for k, v := range caEnv(h.caBundle, h.caFile) {
		if env[k] != v {
			t.Errorf("exec's %s = %q, want %q", k, env[k], v)
		}
	}
	if env["NODE_EXTRA_CA_CERTS"] != h.caFile || env["CURL_CA_BUNDLE"] != h.caBundle {
		t.Errorf("exec env lacks the CA variables: %v", env)
	}
	// start.env and exec.env override them.
	_, _, res := h.execOutput(protocol.Command{ID: "env2", Argv: []string{"sh", "-c", `test "$PIP_CERT" = /mine`},
		Env: map[string]string{"PIP_CERT": "/mine"}})
	if res.Code != 0 {
		t.Errorf("exec.env did not override PIP_CERT: %+v", res)
	}

	// A second CA replaces the first; the original stays.
	ca2 := testCA(t, "Sandbar CA two")
	if ev := h.startCA("s2", "true", ca2); ev.Ev != protocol.EvAgentStarted {
		t.Fatalf("start with another CA: %+v", ev)
	}
	h.until(protocol.EvAgentExit, "")
	if got, want := readFile(t, h.caBundle), origBundle+caBegin+ca2+caEnd; got != want {
		t.Fatalf("bundle after a second CA:\n%s\nwant:\n%s", got, want)
	}
	// A start without one keeps it.
	if ev := h.startCA("s3", "true", ""); ev.Ev != protocol.EvAgentStarted {
		t.Fatalf("start without a CA: %+v", ev)
	}
	h.until(protocol.EvAgentExit, "")
	if got := readFile(t, h.caFile); got != ca2 {
		t.Fatalf("a start without ca_cert changed %s to %q", h.caFile, got)
	}
	if env := h.execEnv("env3"); env["SSL_CERT_FILE"] != h.caBundle {
		t.Errorf("after a start without ca_cert, SSL_CERT_FILE = %q", env["SSL_CERT_FILE"])
	}
	assertNoTempFiles(t, filepath.Dir(h.caBundle))
}

func TestStartRefusesBadCA(t *testing.T) {
	key := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte{1, 2, 3}}))
	for name, bad := range map[string]string{
		"private key":  key,
		"not pem":      "hello",
		"cert and key": testCA(t, "x") + key,
		"too large":    testCA(t, "x") + strings.Repeat(" ", protocol.MaxCACert),
		"too many":     strings.Repeat(testCA(t, "x"), protocol.MaxCACerts+1),
	} {
		t.Run(name, func(t *testing.T) {
			h := newHost(t)
			ev := h.startCA("bad", "echo started", bad)
			if ev.Ev != protocol.EvError || ev.ID != "bad" || ev.Cmd != protocol.CmdStart || !strings.Contains(ev.Message, "ca_cert") {
				t.Fatalf("start with a bad CA: %+v, want an error naming ca_cert", ev)
			}
			if got := readFile(t, h.caBundle); got != origBundle {
				t.Errorf("the bundle changed: %q", got)
			}
			if _, err := os.Stat(h.caFile); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s was written (%v)", h.caFile, err)
			}
			if env := h.execEnv("env"); env["NODE_EXTRA_CA_CERTS"] != "" || env["SSL_CERT_FILE"] != "" {
				t.Errorf("an exec after the refused start has CA variables: %v", env)
			}
		})
	}
}

func TestCAWithoutBundleConfigured(t *testing.T) {
	h := newHostConfig(t, func(c *Config) { c.CABundle, c.CAFile = "", "" })
	if ev := h.startCA("s", "true", testCA(t, "x")); ev.Ev != protocol.EvAgentStarted {
		t.Fatalf("start: %+v, want the agent started without the CA", ev)
	}
	if got := readFile(t, h.caBundle); got != origBundle {
		t.Errorf("the bundle changed: %q", got)
	}
	if env := h.execEnv("env"); env["SSL_CERT_FILE"] != "" {
		t.Errorf("SSL_CERT_FILE = %q with no bundle configured", env["SSL_CERT_FILE"])
	}
}

func TestInstallCAFiles(t *testing.T) {
	ca := testCA(t, "x")
	t.Run("no bundle yet, no folder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "etc", "ssl", "certs")
		bundle, single := filepath.Join(dir, "ca-certificates.crt"), filepath.Join(dir, "sandbar-ca.pem")
		if err := installCA(bundle, single, ca); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, bundle); got != caBegin+ca+caEnd {
			t.Fatalf("bundle = %q", got)
		}
		if fi, err := os.Stat(bundle); err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("bundle mode: %v, %v", fi, err)
		}
	})
	t.Run("bundle without a final newline", func(t *testing.T) {
		dir := t.TempDir()
		bundle := filepath.Join(dir, "b.crt")
		os.WriteFile(bundle, []byte("orig"), 0o644)
		if err := installCA(bundle, filepath.Join(dir, "s.pem"), ca); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, bundle); got != "orig\n"+caBegin+ca+caEnd {
			t.Fatalf("bundle = %q", got)
		}
	})
	t.Run("CRLF PEM is written clean", func(t *testing.T) {
		dir := t.TempDir()
		single := filepath.Join(dir, "s.pem")
		if err := installCA(filepath.Join(dir, "b.crt"), single, "\r\n"+strings.ReplaceAll(ca, "\n", "\r\n")); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, single); got != ca {
			t.Fatalf("single = %q, want %q", got, ca)
		}
	})
	t.Run("unwritable folder", func(t *testing.T) {
		dir := t.TempDir()
		blocker := filepath.Join(dir, "file")
		os.WriteFile(blocker, nil, 0o644)
		err := installCA(filepath.Join(blocker, "b.crt"), filepath.Join(blocker, "s.pem"), ca)
		if err == nil {
			t.Fatal("installCA under a file did not fail")
		}
	})
}

func TestWithoutCA(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "",
		"a\n":                                   "a\n",
		"a\n" + caBegin + "x\n" + caEnd:         "a\n",
		"a\n" + caBegin + "x\n" + caEnd + "b\n": "a\nb\n",
		"a\n" + caBegin + "x\n":                 "a\n",
	} {
		if got := string(withoutCA([]byte(in))); got != want {
			t.Errorf("withoutCA(%q) = %q, want %q", in, got, want)
		}
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a temporary file is left: %s", e.Name())
		}
	}
}

// TestStartTrustsHostCAs: a start carrying Sandbar's CA and the host's
// (well past the 16 KiB one CA took) puts every one into the bundle and
// the single file, and a real TLS client run as an exec (curl, pointed
// by CURL_CA_BUNDLE as the guest's are) trusts a server whose certificate
// one of the host's CAs signed.
func TestStartTrustsHostCAs(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl on this machine")
	}
	corpCA, corpKey := testCAKey(t, "Corp Inspection CA")
	var all strings.Builder
	all.WriteString(testCA(t, "Sandbar CA"))
	all.WriteString(corpCA)
	for i := range 100 {
		all.WriteString(testCA(t, fmt.Sprintf("Host CA %d", i)))
	}
	if all.Len() <= 16<<10 {
		t.Fatalf("only %d bytes", all.Len())
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "inspected hello") }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leafFrom(t, corpCA, corpKey, "127.0.0.1")}}
	srv.StartTLS()
	defer srv.Close()

	h := newHost(t)
	// A bundle OpenSSL reads (the harness's stand-in is not one).
	const image = "# the image's bundle, empty here\n"
	if err := os.WriteFile(h.caBundle, []byte(image), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := h.startCA("s", "true", all.String()); ev.Ev != protocol.EvAgentStarted {
		t.Fatalf("start with the host's CAs: %+v", ev)
	}
	h.until(protocol.EvAgentExit, "")
	if got, want := readFile(t, h.caBundle), image+caBegin+all.String()+caEnd; got != want {
		t.Fatalf("the bundle does not hold every CA sent (%d bytes, want %d)", len(got), len(want))
	}
	if got := readFile(t, h.caFile); got != all.String() {
		t.Fatalf("%s does not hold every CA sent", h.caFile)
	}
	out, errOut, res := h.execOutput(protocol.Command{ID: "curl", Argv: []string{curl, "-sS", "-m", "20", srv.URL}})
	if res.Code != 0 || string(out) != "inspected hello" {
		t.Fatalf("curl with the guest's trust: exit %d: %q %q", res.Code, out, errOut)
	}
	// Without the start's trust the same curl fails: the trust is what
	// made it work.
	_, _, res = h.execOutput(protocol.Command{ID: "curl2", Argv: []string{curl, "-sS", "-m", "20", srv.URL}, Env: map[string]string{"CURL_CA_BUNDLE": "/nonexistent"}})
	if res.Code == 0 {
		t.Fatal("curl succeeded without the CA")
	}
}

// testCAKey returns a fresh self-signed CA in PEM and its key.
func testCAKey(t testing.TB, name string) (string, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), key
}

// leafFrom makes a server certificate for ip signed by the CA.
func leafFrom(t testing.TB, caPEM string, caKey *ecdsa.PrivateKey, ip string) tls.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(caPEM))
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip}, IPAddresses: []net.IP{net.ParseIP(ip)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestStartTakesBackAnEarlierBootsCA: the root outlives a boot (a
// restart boots the same scratch disk), so the first start of a boot that
// carries no ca_cert (the host's settings turned its certificates off)
// takes back what an earlier boot's start added; a later start without
// one in the same boot keeps what this boot's added.
func TestStartTakesBackAnEarlierBootsCA(t *testing.T) {
	h := newHost(t)
	old := testCA(t, "an earlier boot's")
	os.WriteFile(h.caBundle, []byte(origBundle+caBegin+old+caEnd), 0o644)
	os.WriteFile(h.caFile, []byte(old), 0o644)
	if ev := h.startCA("s1", "true", ""); ev.Ev != protocol.EvAgentStarted {
		t.Fatalf("start without a CA: %+v", ev)
	}
	h.until(protocol.EvAgentExit, "")
	if got := readFile(t, h.caBundle); got != origBundle {
		t.Fatalf("the bundle keeps an earlier boot's CA:\n%s", got)
	}
	if _, err := os.Stat(h.caFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there (%v)", h.caFile, err)
	}
	if env := h.execEnv("env"); env["NODE_EXTRA_CA_CERTS"] != "" {
		t.Errorf("NODE_EXTRA_CA_CERTS = %q", env["NODE_EXTRA_CA_CERTS"])
	}
	ca := testCA(t, "this boot's")
	if ev := h.startCA("s2", "true", ca); ev.Ev != protocol.EvAgentStarted {
		t.Fatalf("start with a CA: %+v", ev)
	}
	h.until(protocol.EvAgentExit, "")
	if ev := h.startCA("s3", "true", ""); ev.Ev != protocol.EvAgentStarted {
		t.Fatalf("start without a CA: %+v", ev)
	}
	h.until(protocol.EvAgentExit, "")
	if got := readFile(t, h.caBundle); got != origBundle+caBegin+ca+caEnd {
		t.Fatalf("a later start of the same boot took back this boot's CA:\n%s", got)
	}
	assertNoTempFiles(t, filepath.Dir(h.caBundle))
}

// TestCABundleFor: the CA joins the bundle the image has (Debian's,
// Fedora's through its link, Alpine's), Debian's path when it has none,
// and never a file a link leads out of the root to.
func TestCABundleFor(t *testing.T) {
	mk := func(t *testing.T, root, p string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("roots\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(t *testing.T, root, p, target string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	debian := t.TempDir()
	mk(t, debian, SystemCABundle)
	mk(t, debian, "/etc/ssl/cert.pem")
	fedora := t.TempDir()
	mk(t, fedora, "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem")
	// Fedora's links are absolute; relative here, so that they stay in
	// the test's root (in the guest the root is /).
	link(t, fedora, "/etc/pki/tls/certs/ca-bundle.crt", "../../ca-trust/extracted/pem/tls-ca-bundle.pem")
	link(t, fedora, "/etc/ssl/certs", "../pki/tls/certs")
	alpine := t.TempDir()
	mk(t, alpine, "/etc/ssl/cert.pem")
	bare := t.TempDir()
	outside := t.TempDir()
	mk(t, outside, "/bundle.pem")
	escaping := t.TempDir()
	link(t, escaping, SystemCABundle, filepath.Join(outside, "bundle.pem"))
	for _, c := range []struct{ name, root, want string }{
		{"debian", debian, SystemCABundle},
		// Fedora's /etc/ssl/certs is a link to /etc/pki/tls/certs, so
		// Debian's name finds nothing there, and ca-bundle.crt is
		// followed to the file its other names lead to.
		{"fedora", fedora, "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"},
		{"alpine", alpine, "/etc/ssl/cert.pem"},
		{"none", bare, SystemCABundle},
		{"a link out of the root", escaping, SystemCABundle},
	} {
		if got := CABundleFor(c.root); got != c.want {
			t.Errorf("%s: CABundleFor = %s, want %s", c.name, got, c.want)
		}
	}
}
