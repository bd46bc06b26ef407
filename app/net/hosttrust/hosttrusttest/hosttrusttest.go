// Package hosttrusttest makes the folder of host certificates that
// tests hand to hosttrust.Source (as the person's
// /usr/local/share/ca-certificates would be).
package hosttrusttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Dir makes a folder holding corp.crt, a self-signed CA named cn valid
// for an hour either side of now, and broken.crt, which is not a
// certificate. It returns the folder and the CA's DER.
func Dir(tb testing.TB, cn string) (dir string, der []byte) {
	tb.Helper()
	dir = tb.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"corp.crt":   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"broken.crt": []byte("not a certificate"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir, der
}
