package broker

import (
	"container/list"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// KeyStore keeps the CA between runs: Sandbar passes the OS keychain.
type KeyStore interface {
	// Get returns the value stored under name, or an error wrapping
	// ErrNotFound when there is none.
	Get(ctx context.Context, name string) (string, error)
	Set(ctx context.Context, name, value string) error
}

var (
	// ErrNotFound is what a KeyStore's Get wraps when it holds no value.
	ErrNotFound = errors.New("not found in the key store")
	// ErrCorruptCA: the stored CA cannot be used; the error says how to
	// reset it.
	ErrCorruptCA = errors.New("stored Sandbar CA is unreadable")
)

const (
	// caKeyName is the KeyStore name the CA is kept under: certificate and
	// key in one PEM string of well under 2 KiB (the macOS keychain's
	// command-line tool limits a value's length).
	caKeyName  = "sandbar-ca"
	caValidity = 10 * 365 * 24 * time.Hour
	// leafValidity is how long a leaf is good for; leafBackdate covers a
	// guest clock somewhat behind the host's.
	leafValidity = 24 * time.Hour
	leafBackdate = time.Hour
	// leafRenew: a cached leaf this close to its end is replaced.
	leafRenew  = time.Hour
	leafCached = 256
)

// CA is Sandbar's per-install certificate authority. Its certificate is
// installed in every guest's trust stores (by Sandbar, not this package),
// and it issues the leaves the Interceptor shows the guest. Its key never
// leaves the host.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte

	mu     sync.Mutex
	leaves map[string]*list.Element // host → element of order, holding *leaf
	order  *list.List               // most recently used first
}

type leaf struct {
	host string
	cert *tls.Certificate
}

// LoadOrCreateCA returns the CA kept in ks under "sandbar-ca", making and
// storing one if there is none (or if the stored one has expired). The CA
// is an ECDSA P-256 root valid for 10 years, named "Sandbar session CA
// (<hostname>, <date>)".
func LoadOrCreateCA(ctx context.Context, ks KeyStore) (*CA, error) {
	v, err := ks.Get(ctx, caKeyName)
	switch {
	case err == nil:
		ca, err := parseCA(v)
		if err != nil {
			return nil, fmt.Errorf("%w (%s): delete the keychain item %q of service \"Sandbar\" and Sandbar will make a new CA",
				ErrCorruptCA, err, caKeyName)
		}
		if time.Now().Add(leafValidity).Before(ca.cert.NotAfter) {
			return ca, nil
		}
		// Expired, or about to: a new one costs nothing, as every session
		// installs the current certificate in its guest.
	case !errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("read Sandbar's CA from the keychain: %w", err)
	}
	ca, pemText, err := newCA(time.Now())
	if err != nil {
		return nil, err
	}
	if err := ks.Set(ctx, caKeyName, pemText); err != nil {
		return nil, fmt.Errorf("store Sandbar's new CA in the keychain: %w", err)
	}
	return ca, nil
}

func newCA(now time.Time) (*CA, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("make a CA key: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown host"
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject: pkix.Name{
			CommonName:   fmt.Sprintf("Sandbar session CA (%s, %s)", host, now.Format("2006-01-02")),
			Organization: []string{"Sandbar"},
		},
		NotBefore:             now.Add(-leafBackdate),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs leaves, never another CA
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", fmt.Errorf("make the CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, "", fmt.Errorf("encode the CA key: %w", err)
	}
	text := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	ca, err := parseCA(text)
	if err != nil {
		return nil, "", fmt.Errorf("read back the new CA: %w", err)
	}
	return ca, text, nil
}

// parseCA reads the stored PEM. Its errors describe the problem without
// quoting the text (it holds the key).
func parseCA(text string) (*CA, error) {
	var certDER, keyDER []byte
	rest := []byte(text)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE" && certDER == nil:
			certDER = b.Bytes
		case b.Type == "EC PRIVATE KEY" && keyDER == nil:
			keyDER = b.Bytes
		default:
			return nil, fmt.Errorf("unexpected %q block", b.Type)
		}
	}
	if certDER == nil || keyDER == nil {
		return nil, errors.New("no certificate and key in it")
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		return nil, errors.New("text after the PEM blocks")
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, errors.New("the certificate does not parse")
	}
	key, err := x509.ParseECPrivateKey(keyDER)
	if err != nil {
		return nil, errors.New("the key does not parse")
	}
	if !cert.IsCA || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the key and certificate are not a CA's pair")
	}
	return &CA{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER}),
		leaves:  map[string]*list.Element{},
		order:   list.New(),
	}, nil
}

// CertPEM returns the CA's certificate, PEM-encoded, to install in guests.
func (c *CA) CertPEM() []byte { return append([]byte(nil), c.certPEM...) }

// Certificate returns a leaf for host (a DNS name or an IP address): ECDSA
// P-256, with host as its only subject alternative name, valid from an
// hour ago for 24 hours. Leaves are cached, at most 256 hosts, and renewed
// an hour before they end. It is safe for concurrent use.
func (c *CA) Certificate(host string) (*tls.Certificate, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" || len(host) > 253 || strings.ContainsAny(host, "*/ \\") {
		return nil, fmt.Errorf("no certificate for %q: not a host name", host)
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.leaves[host]; ok {
		l := e.Value.(*leaf)
		if now.Add(leafRenew).Before(l.cert.Leaf.NotAfter) {
			c.order.MoveToFront(e)
			return l.cert, nil
		}
		c.order.Remove(e)
		delete(c.leaves, host)
	}
	cert, err := c.issue(host, now)
	if err != nil {
		return nil, err
	}
	c.leaves[host] = c.order.PushFront(&leaf{host: host, cert: cert})
	for c.order.Len() > leafCached {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.leaves, old.Value.(*leaf).host)
	}
	return cert, nil
}

func (c *CA) issue(host string, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make a key for %s: %w", host, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-leafBackdate),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("make a certificate for %s: %w", host, err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("read back the certificate for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: parsed}, nil
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n.Add(n, big.NewInt(1)) // never zero
}
