package hosttrust

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/guest/protocol"
)

type testCert struct {
	der []byte
	key *ecdsa.PrivateKey
}

func (c testCert) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der})
}

// makeCert makes a certificate named cn, signed by parent (nil: itself).
func makeCert(t *testing.T, cn string, ca bool, parent *testCert, notAfter time.Time) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{"Test Corp"}},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter,
		BasicConstraintsValid: true, IsCA: ca,
	}
	if ca {
		tmpl.KeyUsage = x509.KeyUsageCertSign
	} else {
		tmpl.DNSNames = []string{cn}
	}
	signer, signKey := tmpl, key
	if parent != nil {
		p, _ := x509.ParseCertificate(parent.der)
		signer, signKey = p, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{der: der, key: key}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCollectDir reads a folder the way /usr/local/share/ca-certificates
// is read: the CA certificates are taken, each once; a server's own
// certificate, an expired CA, a malformed file and a file with a private
// key are skipped with a reason naming the file; other names are not
// read at all.
func TestCollectDir(t *testing.T) {
	dir := t.TempDir()
	later := time.Now().Add(24 * time.Hour)
	corp := makeCert(t, "Corp Inspection CA", true, nil, later)
	other := makeCert(t, "Other Root", true, nil, later)
	leaf := makeCert(t, "server.test", false, &corp, later)
	selfLeaf := makeCert(t, "self.test", false, nil, later)
	expired := makeCert(t, "Old CA", true, nil, time.Now().Add(-time.Hour))
	keyDER, _ := x509.MarshalECPrivateKey(corp.key)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})

	write(t, filepath.Join(dir, "corp.crt"), corp.pem())
	write(t, filepath.Join(dir, "sub", "again.crt"), corp.pem()) // the duplicate
	write(t, filepath.Join(dir, "sub", "other.crt"), other.der)  // DER, as some tools write it
	write(t, filepath.Join(dir, "leaf.crt"), leaf.pem())
	write(t, filepath.Join(dir, "self.crt"), selfLeaf.pem())
	write(t, filepath.Join(dir, "expired.crt"), expired.pem())
	write(t, filepath.Join(dir, "broken.crt"), []byte("-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n"))
	write(t, filepath.Join(dir, "garbage.crt"), []byte("hello"))
	write(t, filepath.Join(dir, "withkey.crt"), append(other.pem(), keyPEM...))
	write(t, filepath.Join(dir, "notes.txt"), []byte("not read"))
	write(t, filepath.Join(dir, "key.pem"), keyPEM)

	res, err := Source{Dir: dir}.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Certs {
		got = append(got, c.Subject+" from "+filepath.Base(c.From))
		if c.SHA256 != Fingerprint(c.DER) || len(c.SHA256) != 95 {
			t.Errorf("fingerprint %q", c.SHA256)
		}
	}
	want := []string{"CN=Corp Inspection CA,O=Test Corp from corp.crt", "CN=self.test,O=Test Corp from self.crt", "CN=Other Root,O=Test Corp from other.crt"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("taken:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	skipped := map[string]string{}
	for _, s := range res.Skipped {
		skipped[filepath.Base(s.From)] = s.Reason
	}
	for file, why := range map[string]string{
		"leaf.crt":    "not a CA certificate",
		"expired.crt": "expired on",
		"broken.crt":  "no PEM block decodes",
		"garbage.crt": "is not a certificate that parses",
		"withkey.crt": "private key",
	} {
		if !strings.Contains(skipped[file], why) {
			t.Errorf("%s skipped for %q, want %q", file, skipped[file], why)
		}
	}
	if len(skipped) != 5 {
		t.Errorf("skipped: %v", res.Skipped)
	}
	// Nothing of the key file leaves: its certificate neither.
	if pemOut := res.PEM(); strings.Contains(pemOut, "PRIVATE") || strings.Count(pemOut, "BEGIN CERTIFICATE") != 3 {
		t.Errorf("PEM out:\n%s", pemOut)
	}
	if _, err := protocol.ParseCACert(res.PEM()); err != nil {
		t.Errorf("the guest refuses what was collected: %v", err)
	}
}

// TestCollectBundle: a certificate in the system bundle that is not one
// of the package's own was added on this machine and is taken; the
// package's own are not.
func TestCollectBundle(t *testing.T) {
	root := t.TempDir()
	later := time.Now().Add(time.Hour)
	stock1, stock2 := makeCert(t, "Stock One", true, nil, later), makeCert(t, "Stock Two", true, nil, later)
	local := makeCert(t, "Local Added", true, nil, later)
	handAdded := makeCert(t, "Hand Added", true, nil, later)
	write(t, filepath.Join(root, "pkg", "mozilla", "One.crt"), stock1.pem())
	write(t, filepath.Join(root, "pkg", "mozilla", "Two.crt"), stock2.pem())
	write(t, filepath.Join(root, "local", "corp", "local.crt"), local.pem())
	var bundle []byte
	for _, c := range []testCert{stock1, local, stock2, handAdded} {
		bundle = append(bundle, c.pem()...)
	}
	write(t, filepath.Join(root, "bundle.crt"), bundle)
	p := places{
		local:  []localDir{{filepath.Join(root, "local"), certExts}, {filepath.Join(root, "absent"), certExts}},
		bundle: filepath.Join(root, "bundle.crt"),
		pkg:    filepath.Join(root, "pkg"),
	}
	c := &collector{now: time.Now, seen: map[string]bool{}}
	if err := p.collect(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cert := range c.res.Certs {
		got = append(got, cert.Subject)
	}
	if strings.Join(got, ";") != "CN=Local Added,O=Test Corp;CN=Hand Added,O=Test Corp" || len(c.res.Skipped) != 0 {
		t.Errorf("taken %v, skipped %v", got, c.res.Skipped)
	}
}

// TestCollectBounds: the collector stays within what the guest takes
// beside Sandbar's own CA.
func TestCollectBounds(t *testing.T) {
	if MaxPEM+(16<<10) > protocol.MaxCACert || MaxCerts+1 > protocol.MaxCACerts {
		t.Fatalf("hosttrust's bounds (%d bytes, %d certificates) leave no room for Sandbar's CA within the protocol's (%d, %d)", MaxPEM, MaxCerts, protocol.MaxCACert, protocol.MaxCACerts)
	}
	dir := t.TempDir()
	ca := makeCert(t, "One", true, nil, time.Now().Add(time.Hour))
	var many []byte
	for range MaxCerts + 5 {
		many = append(many, makeCert(t, "Many", true, nil, time.Now().Add(time.Hour)).pem()...)
	}
	write(t, filepath.Join(dir, "a.crt"), ca.pem())
	write(t, filepath.Join(dir, "b.crt"), many)
	res, err := Source{Dir: dir}.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Certs) != MaxCerts || len(res.Skipped) != 6 || !strings.Contains(res.Skipped[0].Reason, "the rest are not carried") {
		t.Errorf("%d taken, %d skipped (%v)", len(res.Certs), len(res.Skipped), res.Skipped)
	}
	// An absent folder holds nothing, and is no error.
	if res, err := (Source{Dir: filepath.Join(dir, "absent")}).Collect(context.Background()); err != nil || len(res.Certs)+len(res.Skipped) != 0 {
		t.Errorf("an absent folder: %v %v", res, err)
	}
}

// TestCollectThisMachine reads this machine's own places: whatever it
// finds parses as the guest wants it, each certificate a CA's.
func TestCollectThisMachine(t *testing.T) {
	res, err := Source{}.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Certs {
		t.Logf("carried: %s (%s) from %s", c.Subject, c.SHA256, c.From)
	}
	for _, s := range res.Skipped {
		t.Logf("skipped: %s", s)
	}
	if len(res.Certs) > 0 {
		if _, err := protocol.ParseCACert(res.PEM()); err != nil {
			t.Errorf("the guest refuses this machine's certificates: %v", err)
		}
	}
}
