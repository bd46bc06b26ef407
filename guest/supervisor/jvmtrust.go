package supervisor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The JVM keeps its own trust store (a keystore, not the PEM bundle), so
// a JVM in the guest (an environment's, or one the agent installs before
// a later start) gets the CAs of start's ca_cert through keytool, each
// under an alias of Sandbar's. Without keytool there is no JVM to tell,
// and nothing is done.

// JVMTrust says how the CAs reach a JVM's trust store.
type JVMTrust struct {
	// Keytool is the program, looked up on PATH; "" or not found: no JVM
	// is told. The guest passes "keytool".
	Keytool string
	// Keystore is the trust store; "": the JDK's own (keytool -cacerts).
	Keystore string
	// StorePass is its password; "": the JDK's default, changeit.
	StorePass string
}

// jvmAliasPrefix marks the aliases Sandbar adds, so a later start can
// take back those it no longer sends.
const jvmAliasPrefix = "sandbar-"

// jvmTimeout bounds all of keytool's runs for one start (a JVM starts in
// seconds under software emulation).
const jvmTimeout = 2 * time.Minute

// install puts blocks into the trust store under aliases of Sandbar's
// and takes out those of Sandbar's that blocks no longer hold. It
// returns how many were added.
func (j JVMTrust) install(ctx context.Context, blocks []*pem.Block) (int, error) {
	if j.Keytool == "" {
		return 0, nil
	}
	if _, err := exec.LookPath(j.Keytool); err != nil {
		return 0, nil // no JVM
	}
	ctx, cancel := context.WithTimeout(ctx, jvmTimeout)
	defer cancel()
	run := func(args ...string) (string, error) { return j.run(ctx, args...) }
	want := map[string]*pem.Block{}
	for _, b := range blocks {
		sum := sha256.Sum256(b.Bytes)
		want[jvmAliasPrefix+hex.EncodeToString(sum[:8])] = b
	}
	have := map[string]bool{}
	if j.Keystore == "" || fileExists(j.Keystore) {
		list, err := run("-list")
		if err != nil {
			return 0, err
		}
		for _, a := range keystoreAliases(list) {
			if strings.HasPrefix(a, jvmAliasPrefix) {
				have[a] = true
			}
		}
	}
	var errs []error
	for a := range have {
		if want[a] == nil {
			if _, err := run("-delete", "-alias", a); err != nil {
				errs = append(errs, err)
			}
		}
	}
	dir, err := os.MkdirTemp("", "sandbar-jvm-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	added := 0
	for _, a := range slices.Sorted(maps.Keys(want)) {
		if have[a] {
			continue
		}
		f := filepath.Join(dir, a+".pem")
		if err := os.WriteFile(f, pem.EncodeToMemory(want[a]), 0o600); err != nil {
			return added, err
		}
		if _, err := run("-importcert", "-alias", a, "-file", f); err != nil {
			errs = append(errs, err)
			continue
		}
		added++
	}
	return added, errors.Join(errs...)
}

// keystoreAliases reads the aliases from keytool -list's output, whose
// entries are lines "alias, date, entryType,".
func keystoreAliases(list string) []string {
	var out []string
	for _, l := range strings.Split(list, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasSuffix(l, "Entry,") {
			continue
		}
		if a, _, ok := strings.Cut(l, ", "); ok {
			out = append(out, a)
		}
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// run runs keytool on the trust store with args (the command first).
func (j JVMTrust) run(ctx context.Context, args ...string) (string, error) {
	store := []string{"-cacerts"}
	if j.Keystore != "" {
		store = []string{"-keystore", j.Keystore}
	}
	pass := j.StorePass
	if pass == "" {
		pass = "changeit"
	}
	args = append(append(args, store...), "-storepass", pass, "-noprompt")
	cmd := exec.CommandContext(ctx, j.Keytool, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("keytool %s: %w: %s", args[0], err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}
