package supervisor

import (
	"context"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sandbar/guest/protocol"
)

// TestJVMTrust puts the CAs into a real keystore with the real keytool:
// each under an alias of Sandbar's, once however often it is sent; a
// later set replaces Sandbar's aliases and leaves the store's own.
func TestJVMTrust(t *testing.T) {
	if _, err := exec.LookPath("keytool"); err != nil {
		t.Skip("no keytool on this machine (a JDK): the JVM's trust is not tested here")
	}
	if testing.Short() {
		t.Skip("keytool starts a JVM per run")
	}
	ctx := context.Background()
	store := filepath.Join(t.TempDir(), "cacerts")
	j := JVMTrust{Keytool: "keytool", Keystore: store}
	blocks := func(pems ...string) []*pem.Block {
		b, err := protocol.ParseCACert(strings.Join(pems, ""))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ownFile := filepath.Join(t.TempDir(), "own.pem")
	if err := os.WriteFile(ownFile, []byte(testCA(t, "The Store's Own")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := j.run(ctx, "-importcert", "-alias", "own", "-file", ownFile); err != nil {
		t.Fatal(err)
	}
	sandbar, corp, other := testCA(t, "Sandbar CA"), testCA(t, "Corp CA"), testCA(t, "Other CA")
	aliases := func() []string {
		t.Helper()
		out, err := j.run(ctx, "-list")
		if err != nil {
			t.Fatal(err)
		}
		a := keystoreAliases(out)
		slices.Sort(a)
		return a
	}
	if n, err := j.install(ctx, blocks(sandbar, corp)); err != nil || n != 2 {
		t.Fatalf("install: %d added, %v", n, err)
	}
	first := aliases()
	if len(first) != 3 || first[0] != "own" || !strings.HasPrefix(first[1], "sandbar-") || !strings.HasPrefix(first[2], "sandbar-") {
		t.Fatalf("aliases after the first start: %v", first)
	}
	if n, err := j.install(ctx, blocks(sandbar, corp)); err != nil || n != 0 || !slices.Equal(aliases(), first) {
		t.Fatalf("the same again: %d added, %v; aliases %v", n, err, aliases())
	}
	if n, err := j.install(ctx, blocks(sandbar, other)); err != nil || n != 1 {
		t.Fatalf("a later set: %d added, %v", n, err)
	}
	if got := aliases(); len(got) != 3 || slices.Equal(got, first) || !slices.Contains(got, "own") {
		t.Fatalf("aliases after a later set: %v (first %v)", got, first)
	}
	// No keytool: no JVM, nothing done, no error.
	if n, err := (JVMTrust{Keytool: "no-such-keytool"}).install(ctx, blocks(corp)); n != 0 || err != nil {
		t.Errorf("without keytool: %d, %v", n, err)
	}
}
