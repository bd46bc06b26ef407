// Package hosttrust finds the CA certificates this machine trusts beyond
// the stock bundle (a company's TLS-inspecting proxy, a private CA added
// by an administrator), so that a session's VM can trust them too.
//
// Linux: every certificate file under /usr/local/share/ca-certificates
// (and Fedora's /etc/pki/ca-trust/source/anchors), plus any certificate in
// the system bundle that is not one of the ca-certificates package's own.
// macOS: the certificates the admin and user trust-settings domains trust
// as roots for SSL, read with the Security framework. A test points
// Source.Dir at a folder of its own, read like
// /usr/local/share/ca-certificates, instead.
//
// Only certificates are read and returned: a file that holds a private
// key is skipped whole, with a warning, and nothing of it is kept. Only CA
// certificates are taken (basic constraints say CA, or the certificate is
// self-signed); a server's own certificate, an expired one or one that
// does not parse is skipped with a warning naming where it was.
//
// It is not a verifier and keeps no state: each Collect reads afresh.
package hosttrust

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Bounds of what is collected, within what the guest takes in start's
// ca_cert (guest/protocol MaxCACert, MaxCACerts) beside Sandbar's own CA.
const (
	// MaxCerts bounds the certificates collected; more are skipped.
	MaxCerts = 200
	// MaxPEM bounds the PEM of the certificates collected, in bytes.
	MaxPEM = 400 << 10
	// maxFile bounds one file read.
	maxFile = 1 << 20
)

// Cert is one certificate this machine trusts.
type Cert struct {
	// Subject is the certificate's subject, as x509 writes it.
	Subject string
	// SHA256 is the fingerprint of its DER, upper-case hex pairs joined by
	// colons (as Keychain Access and openssl show it).
	SHA256 string
	// DER is the certificate.
	DER []byte
	// From says where it was found: a file, or a trust-settings domain.
	From string
}

// PEM returns the certificate as one PEM CERTIFICATE block.
func (c Cert) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.DER})
}

// Skipped is something that was not taken, and why.
type Skipped struct {
	// From names the file (or domain) it was in.
	From   string
	Reason string
}

func (s Skipped) String() string { return s.From + ": " + s.Reason }

// Result is what Collect found.
type Result struct {
	Certs   []Cert
	Skipped []Skipped
}

// PEM returns every certificate as PEM blocks, one after another.
func (r Result) PEM() string {
	var b strings.Builder
	for _, c := range r.Certs {
		b.Write(c.PEM())
	}
	return b.String()
}

// EnvDir names the environment variable main reads into Source.Dir: a
// folder read instead of this machine's places, for tests.
const EnvDir = "SANDBAR_HOST_CA_DIR"

// Source says where to look.
type Source struct {
	// Dir, when set, is read instead of the platform's own places, the
	// way /usr/local/share/ca-certificates is (main reads EnvDir into
	// it; tests use it).
	Dir string
	// Logger gets a warning for each thing skipped; nil: none.
	Logger *slog.Logger
	// Now is the time expiry is checked against; nil: time.Now.
	Now func() time.Time
}

// Collect returns the certificates this machine trusts beyond the stock
// bundle, each once, and what it skipped. An error means the places could
// not be read at all; a bad file is a Skipped, not an error.
func (s Source) Collect(ctx context.Context) (Result, error) {
	c := &collector{now: time.Now, seen: map[string]bool{}}
	if s.Now != nil {
		c.now = s.Now
	}
	var err error
	if s.Dir != "" {
		err = c.dir(ctx, s.Dir, certExts)
	} else {
		err = platform(ctx, c)
	}
	if s.Logger != nil {
		for _, sk := range c.res.Skipped {
			s.Logger.Warn("a certificate this machine has was not carried into sessions", "from", sk.From, "reason", sk.Reason)
		}
	}
	return c.res, err
}

// certExts are the names update-ca-certificates takes from
// /usr/local/share/ca-certificates.
var certExts = []string{".crt"}

// collector gathers certificates, each once, within the bounds.
type collector struct {
	now  func() time.Time
	res  Result
	seen map[string]bool // fingerprints taken
	size int
}

func (c *collector) skip(from, format string, a ...any) {
	c.res.Skipped = append(c.res.Skipped, Skipped{From: from, Reason: fmt.Sprintf(format, a...)})
}

// dir reads every file under root whose name ends in one of exts, in
// lexical order. A root that does not exist holds nothing.
func (c *collector) dir(ctx context.Context, root string, exts []string) error {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == root {
				return fs.SkipDir
			}
			c.skip(path, "cannot be read: %v", err)
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if d.IsDir() || !hasExt(path, exts) {
			return nil
		}
		data, err := readFile(path)
		if err != nil {
			c.skip(path, "%v", err)
			return nil
		}
		c.file(path, data)
		return nil
	})
	if err != nil && !errors.Is(err, fs.SkipDir) {
		return fmt.Errorf("read the certificates in %s: %w", root, err)
	}
	return nil
}

func hasExt(path string, exts []string) bool {
	for _, e := range exts {
		if strings.EqualFold(filepath.Ext(path), e) {
			return true
		}
	}
	return false
}

// readFile reads a regular file (following links, as
// update-ca-certificates does) of at most maxFile bytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %v", err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("is larger than %d bytes: not a certificate file", maxFile)
	}
	return data, nil
}

// privateKeyPEM matches the PEM armour of every kind of private key
// (PRIVATE KEY, RSA PRIVATE KEY, EC PRIVATE KEY, ENCRYPTED PRIVATE KEY).
var privateKeyPEM = []byte("PRIVATE KEY-----")

// file takes the certificates of one file: PEM CERTIFICATE blocks, or
// one DER certificate. A file that holds a private key is skipped whole.
func (c *collector) file(from string, data []byte) {
	if bytes.Contains(data, privateKeyPEM) {
		c.skip(from, "holds a private key: the file is skipped, and no key leaves this machine; keep only certificates in it")
		return
	}
	if !bytes.Contains(data, []byte("-----BEGIN ")) {
		c.der(from, data)
		return
	}
	found := false
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		found = true
		if b.Type != "CERTIFICATE" {
			c.skip(from, "holds a PEM block of type %q, which is not a certificate: it is skipped", b.Type)
			continue
		}
		c.der(from, b.Bytes)
	}
	if !found {
		c.skip(from, "is not a certificate: no PEM block decodes; fix or remove the file")
	}
}

// der takes one certificate when it is a CA certificate, still valid and
// not taken yet.
func (c *collector) der(from string, der []byte) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		c.skip(from, "is not a certificate that parses (%v); fix or remove the file", err)
		return
	}
	sum := sha256.Sum256(cert.Raw)
	fp := fingerprint(sum[:])
	switch {
	case c.seen[fp]:
		return
	case !isCA(cert):
		c.skip(from, "%s is not a CA certificate (a server's own?): only CA certificates are carried", cert.Subject)
		return
	case c.now().After(cert.NotAfter):
		c.skip(from, "%s expired on %s", cert.Subject, cert.NotAfter.UTC().Format(time.DateOnly))
		return
	case len(c.res.Certs) >= MaxCerts:
		c.skip(from, "%s: more than %d certificates: the rest are not carried", cert.Subject, MaxCerts)
		return
	}
	n := len(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
	if c.size+n > MaxPEM {
		c.skip(from, "%s: the certificates carried would pass %d KiB: the rest are not carried", cert.Subject, MaxPEM>>10)
		return
	}
	c.size += n
	c.seen[fp] = true
	c.res.Certs = append(c.res.Certs, Cert{Subject: cert.Subject.String(), SHA256: fp, DER: cert.Raw, From: from})
}

// isCA reports whether cert may anchor a chain: its basic constraints say
// CA, or it signs itself (a root, or a self-signed server certificate a
// person chose to trust).
func isCA(cert *x509.Certificate) bool {
	if cert.BasicConstraintsValid && cert.IsCA {
		return true
	}
	return bytes.Equal(cert.RawSubject, cert.RawIssuer) &&
		cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature) == nil
}

// fingerprint writes a digest as upper-case hex pairs joined by colons.
func fingerprint(sum []byte) string {
	var b strings.Builder
	for i, x := range sum {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02X", x)
	}
	return b.String()
}

// Fingerprint returns the SHA-256 fingerprint of a DER certificate, as
// Cert.SHA256 writes it.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return fingerprint(sum[:])
}
