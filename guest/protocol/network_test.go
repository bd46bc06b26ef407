package protocol

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// testCA returns a fresh self-signed CA certificate in PEM.
func testCA(t testing.TB) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Sandbar test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestParseCACert(t *testing.T) {
	ca, other := testCA(t), testCA(t)
	key := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}))
	withHeader := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte{1}}))
	empty := "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"
	tests := []struct {
		name    string
		in      string
		blocks  int
		wantErr string
	}{
		{"one", ca, 1, ""},
		{"two, CRLF and blank lines around", "\r\n" + strings.ReplaceAll(ca, "\n", "\r\n") + "\n\n" + other + "\n", 2, ""},
		{"empty", "", 0, "no PEM CERTIFICATE block"},
		{"only space", " \n\t", 0, "no PEM CERTIFICATE block"},
		{"text before", "Sandbar CA\n" + ca, 0, "text outside a PEM block"},
		{"text after", ca + "trailer\n", 0, "text outside a PEM block"},
		{"private key", key, 0, `type "PRIVATE KEY"`},
		{"key after a cert", ca + key, 0, `type "PRIVATE KEY"`},
		{"headers", withHeader, 0, "has headers"},
		{"empty block", empty, 0, "is empty"},
		{"bad base64", "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n", 0, "does not decode"},
		{"no end", "-----BEGIN CERTIFICATE-----\n" + strings.Repeat("QUFB", 10) + "\n", 0, "does not decode"},
		{"broken block before a good one", "-----BEGIN CERTIFICATE-----\n!!!!\n" + ca, 0, "do not decode"},
		{"too long", ca + strings.Repeat(" ", MaxCACert), 0, "more than 524288"},
		{"as many as allowed", strings.Repeat(ca, MaxCACerts), MaxCACerts, ""},
		{"too many", strings.Repeat(ca, MaxCACerts+1), 0, "more than 256 CERTIFICATE blocks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks, err := ParseCACert(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(blocks) != tt.blocks {
				t.Fatalf("%d blocks, want %d", len(blocks), tt.blocks)
			}
			for _, b := range blocks {
				if _, err := x509.ParseCertificate(b.Bytes); err != nil {
					t.Errorf("a block is not the certificate sent: %v", err)
				}
			}
		})
	}
}

func TestStartCACertValidate(t *testing.T) {
	start := Command{Cmd: CmdStart, ID: "s", Agent: &Agent{Command: "claude"}}
	good := start
	good.CACert = testCA(t)
	if err := good.Validate(); err != nil {
		t.Fatalf("start with a CA: %v", err)
	}
	bad := start
	bad.CACert = "not a certificate"
	if err := bad.Validate(); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "ca_cert") {
		t.Fatalf("start with a bad CA: %v, want ErrMalformed naming ca_cert", err)
	}
}

func TestPortsValidate(t *testing.T) {
	many := make([]Port, MaxPorts+1)
	for i := range many {
		many[i].Port = uint16(i + 1)
	}
	tests := []struct {
		name    string
		ports   []Port
		wantErr string
	}{
		{"none", nil, ""},
		{"sorted", []Port{{Port: 22}, {Port: 3000}, {Port: 5173, Loopback: true}, {Port: 65535}}, ""},
		{"as many as allowed", many[:MaxPorts], ""},
		{"too many", many, "more than 256"},
		{"zero", []Port{{Port: 0}}, "port 0"},
		{"out of order", []Port{{Port: 80}, {Port: 22}}, "port 22"},
		{"twice", []Port{{Port: 80}, {Port: 80, Loopback: true}}, "port 80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Event{Ev: EvPorts, Ports: tt.ports}.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want ErrMalformed containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestReaderRefusesBadPorts(t *testing.T) {
	in := `{"ev":"ports","seq":1,"ts":1,"ports":[{"port":8080},{"port":22}]}` + "\n" +
		`{"ev":"ports","seq":2,"ts":1,"ports":[{"port":70000}]}` + "\n" +
		`{"ev":"ports","seq":3,"ts":1,"ports":[{"port":22},{"port":8080,"loopback":true}],"truncated":true}` + "\n"
	r := NewReader(strings.NewReader(in))
	for i, want := range []string{"port 22", "cannot unmarshal"} {
		if _, err := r.ReadEvent(); !errors.Is(err, ErrMalformed) || !IsRecoverable(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("line %d: err = %v, want a recoverable ErrMalformed containing %q", i+1, err, want)
		}
	}
	e, err := r.ReadEvent()
	if err != nil || len(e.Ports) != 2 || !e.Ports[1].Loopback || !e.Truncated {
		t.Fatalf("a good ports event: %+v, %v", e, err)
	}
}

func TestReadyNetError(t *testing.T) {
	in := `{"ev":"system:ready","seq":1,"ts":1,"version":3,"net_error":"` + strings.Repeat("x", MaxNetError+1) + `"}` + "\n" +
		`{"ev":"system:ready","seq":2,"ts":1,"version":3,"net_error":"DHCP on eth0: no offer within 3s"}` + "\n" +
		`{"ev":"system:ready","seq":3,"ts":1,"version":3}` + "\n"
	r := NewReader(strings.NewReader(in))
	if _, err := r.ReadEvent(); !errors.Is(err, ErrMalformed) || !IsRecoverable(err) || !strings.Contains(err.Error(), "net_error") {
		t.Fatalf("a net_error past MaxNetError: err = %v, want a recoverable ErrMalformed naming net_error", err)
	}
	e, err := r.ReadEvent()
	if err != nil || e.NetError != "DHCP on eth0: no offer within 3s" {
		t.Fatalf("ready with a net_error: %+v, %v", e, err)
	}
	e, err = r.ReadEvent()
	if err != nil || e.NetError != "" {
		t.Fatalf("ready without one: %+v, %v", e, err)
	}
}
