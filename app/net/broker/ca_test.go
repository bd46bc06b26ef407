package broker_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/net/broker"
)

// memStore is a KeyStore in memory.
type memStore struct {
	mu   sync.Mutex
	m    map[string]string
	sets int
	err  error // returned by Get, when set
}

func newMemStore() *memStore { return &memStore{m: map[string]string{}} }

func (s *memStore) Get(ctx context.Context, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", s.err
	}
	v, ok := s.m[name]
	if !ok {
		return "", fmt.Errorf("get %s: %w", name, broker.ErrNotFound)
	}
	return v, nil
}

func (s *memStore) Set(ctx context.Context, name, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[name] = value
	s.sets++
	return nil
}

func TestLoadOrCreateCA(t *testing.T) {
	ctx := context.Background()
	ks := newMemStore()
	ca, err := broker.LoadOrCreateCA(ctx, ks)
	if err != nil {
		t.Fatal(err)
	}
	if ks.sets != 1 {
		t.Fatalf("stored %d times, want once", ks.sets)
	}
	if n := len(ks.m["sandbar-ca"]); n == 0 || n >= 2048 {
		t.Errorf("stored value is %d bytes, want 1..2047", n)
	}
	again, err := broker.LoadOrCreateCA(ctx, ks)
	if err != nil {
		t.Fatal(err)
	}
	if ks.sets != 1 || string(again.CertPEM()) != string(ca.CertPEM()) {
		t.Errorf("the second load made a new CA")
	}
	cert := parsePEM(t, ca.CertPEM())
	if !cert.IsCA || !strings.HasPrefix(cert.Subject.CommonName, "Sandbar session CA (") {
		t.Errorf("CA certificate: IsCA %v, CN %q", cert.IsCA, cert.Subject.CommonName)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life < 9*365*24*time.Hour {
		t.Errorf("CA valid for %v", life)
	}
}

func TestLoadOrCreateCACorrupt(t *testing.T) {
	ctx := context.Background()
	good := newMemStore()
	if _, err := broker.LoadOrCreateCA(ctx, good); err != nil {
		t.Fatal(err)
	}
	stored := good.m["sandbar-ca"]
	certOnly := stored[:strings.Index(stored, "-----BEGIN EC PRIVATE KEY")]
	for name, v := range map[string]string{
		"garbage":   "not a pem at all",
		"cert only": certOnly,
		"truncated": stored[:len(stored)/2],
		"bad der":   "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" + stored[len(certOnly):],
	} {
		t.Run(name, func(t *testing.T) {
			ks := newMemStore()
			ks.m["sandbar-ca"] = v
			_, err := broker.LoadOrCreateCA(ctx, ks)
			if !errors.Is(err, broker.ErrCorruptCA) {
				t.Fatalf("err %v, want ErrCorruptCA", err)
			}
			if msg := err.Error(); !strings.Contains(msg, `delete the keychain item "sandbar-ca" of service "Sandbar"`) || strings.Contains(msg, "PRIVATE") {
				t.Errorf("message %q", msg)
			}
			if ks.sets != 0 {
				t.Errorf("a corrupt CA was overwritten")
			}
		})
	}
}

func TestLoadOrCreateCAKeychainError(t *testing.T) {
	ks := newMemStore()
	ks.err = errors.New("keychain is locked")
	if _, err := broker.LoadOrCreateCA(context.Background(), ks); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("err %v", err)
	}
	if ks.sets != 0 {
		t.Errorf("a new CA was stored over one that could not be read")
	}
}

func parsePEM(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLeafCertificate(t *testing.T) {
	ca, err := broker.LoadOrCreateCA(context.Background(), newMemStore())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())

	leaf, err := ca.Certificate("github.test")
	if err != nil {
		t.Fatal(err)
	}
	c := leaf.Leaf
	verify := func(name string) error {
		_, err := c.Verify(x509.VerifyOptions{DNSName: name, Roots: roots})
		return err
	}
	if err := verify("github.test"); err != nil {
		t.Errorf("leaf does not verify for its host: %v", err)
	}
	if err := verify("evil.test"); err == nil {
		t.Errorf("leaf verifies for another host")
	}
	if len(c.DNSNames) != 1 || len(c.IPAddresses) != 0 {
		t.Errorf("SANs %v %v, want the host only", c.DNSNames, c.IPAddresses)
	}
	now := time.Now()
	if d := now.Sub(c.NotBefore); d < 50*time.Minute || d > 70*time.Minute {
		t.Errorf("NotBefore %v before now, want about an hour", d)
	}
	if d := c.NotAfter.Sub(now); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("NotAfter %v after now, want about 24 h", d)
	}
	if again, _ := ca.Certificate("GitHub.test."); again != leaf {
		t.Errorf("the leaf was not cached (name case and dot ignored)")
	}

	ipLeaf, err := ca.Certificate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ipLeaf.Leaf.Verify(x509.VerifyOptions{DNSName: "127.0.0.1", Roots: roots}); err != nil {
		t.Errorf("IP leaf: %v", err)
	}

	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if _, err := ca.Certificate(fmt.Sprintf("h%d.test", i%4)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
