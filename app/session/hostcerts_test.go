package session

import (
	"context"
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/net/hosttrust"
	"sandbar/app/net/hosttrust/hosttrusttest"
	"sandbar/guest/protocol"
)

// TestHostCertsInTheStart: a session carries this machine's CA
// certificates in start's ca_cert and its log names each one (subject and
// fingerprint) and each file left out; with the setting off it carries
// none and says so.
func TestHostCertsInTheStart(t *testing.T) {
	dir, der := hosttrusttest.Dir(t, "Corp Inspection CA")
	f := newFixtureWith(t, func(c *Config) { c.HostTrust = hosttrust.Source{Dir: dir} })
	ctx := context.Background()

	a := &agentSetup{}
	f.m.hostCAs(ctx, a)
	blocks, err := protocol.ParseCACert(a.caPEM)
	if err != nil || len(blocks) != 1 {
		t.Fatalf("ca_cert %q: %v", a.caPEM, err)
	}
	if c, _ := x509.ParseCertificate(blocks[0].Bytes); c == nil || c.Subject.CommonName != "Corp Inspection CA" {
		t.Fatalf("ca_cert holds %v", c)
	}

	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo up; sleep 600"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "trust: carrying a certificate this machine trusts: CN=Corp Inspection CA (SHA-256 "+hosttrust.Fingerprint(der)+")")
	waitFor(t, f, s.ID, "trust: not carried: "+filepath.Join(dir, "broken.crt")+": is not a certificate")
	f.m.Stop(ctx, s.ID)

	if err := f.m.SetHostCertsOn(ctx, false); err != nil {
		t.Fatal(err)
	}
	a = &agentSetup{}
	f.m.hostCAs(ctx, a)
	if a.caPEM != "" || len(a.notes) != 1 || !strings.Contains(a.notes[0], "not carried into sessions") {
		t.Fatalf("with the setting off: ca_cert %q, notes %q", a.caPEM, a.notes)
	}
	hc, err := f.m.HostCerts(ctx)
	if err != nil || hc.On || len(hc.Certs) != 1 {
		t.Errorf("HostCerts with the setting off: %+v %v", hc, err)
	}
}
