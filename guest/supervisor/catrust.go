package supervisor

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sandbar/guest/protocol"
)

// Trusting Sandbar's CA and the host's: the host's credential broker
// answers HTTPS for the hosts it brokers with certificates of a CA made
// per install, and a company's network may inspect HTTPS with a CA the
// host trusts (app/net/hosttrust); start's ca_cert carries both. The
// guest adds them to the system bundle, which OpenSSL, GnuTLS, Go and
// Python's ssl read, writes them alone for Node (NODE_EXTRA_CA_CERTS adds
// to Node's own list), points the variables that tools read instead of
// the system's trust at them, and gives them to a JVM (jvmtrust.go).

// Where the guest image keeps its trust (Debian's ca-certificates).
const (
	SystemCABundle = "/etc/ssl/certs/ca-certificates.crt"
	SandbarCAFile  = "/etc/ssl/certs/sandbar-ca.pem"
)

// caBundles are where distributions keep the system bundle, in the
// order they are looked for: Debian and Ubuntu (and Alpine with
// ca-certificates), Fedora and RHEL, openSUSE, Alpine without it.
var caBundles = []string{
	SystemCABundle,
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// CABundleFor is the system bundle of the root at root ("/" for the
// running system): the first of caBundles it has, with its links
// followed (Fedora's is a link into /etc/pki/ca-trust/extracted, which
// its other names lead to as well), so that the CA joins the public
// roots the image already trusts. Debian's path when it has none: the
// bundle then holds only the start's CAs.
func CABundleFor(root string) string {
	for _, p := range caBundles {
		full := filepath.Join(root, p)
		fi, err := os.Stat(full)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		real, err := filepath.EvalSymlinks(full)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(root, real)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue // a link out of the root: not the image's file
		}
		return filepath.Join("/", rel)
	}
	return SystemCABundle
}

// maxCABundle bounds the system bundle read before the CA is added
// (Debian's is about 220 KB).
const maxCABundle = 64 << 20

// The lines around the CA in the bundle: a later start replaces what is
// between them instead of adding the CA twice.
const (
	caBegin = "# Sandbar CA: added by the guest supervisor from the host's start command\n"
	caEnd   = "# end of the Sandbar CA\n"
)

// caEnv is the environment that points tools at the trust with the CA.
func caEnv(bundle, single string) map[string]string {
	return map[string]string{
		"NODE_EXTRA_CA_CERTS": single,
		"SSL_CERT_FILE":       bundle,
		"REQUESTS_CA_BUNDLE":  bundle,
		"PIP_CERT":            bundle,
		"GIT_SSL_CAINFO":      bundle,
		"CURL_CA_BUNDLE":      bundle,
	}
}

// installCA writes the CA certificates of cert (a ca_cert that
// protocol.ParseCACert accepts) alone to single and adds them to bundle,
// keeping what bundle held. Each file is replaced by a rename, so a
// reader sees the old file or the new one, never half of one.
func installCA(bundle, single, cert string) error {
	blocks, err := protocol.ParseCACert(cert)
	if err != nil {
		return fmt.Errorf("ca_cert: %w", err)
	}
	// Re-encoded, so the files hold the blocks and nothing else.
	var ca bytes.Buffer
	for _, b := range blocks {
		if err := pem.Encode(&ca, b); err != nil {
			return fmt.Errorf("encode the CA: %w", err)
		}
	}
	orig, err := readBounded(bundle, maxCABundle)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the CA bundle: %w", err)
	}
	orig = withoutCA(orig)
	if len(orig) > 0 && orig[len(orig)-1] != '\n' {
		orig = append(orig, '\n')
	}
	next := append(orig, caBegin...)
	next = append(next, ca.Bytes()...)
	next = append(next, caEnd...)
	if err := replaceFile(single, ca.Bytes()); err != nil {
		return err
	}
	return replaceFile(bundle, next)
}

// removeCA takes out of bundle the CA section an earlier start added and
// removes single, reporting whether there was a section.
func removeCA(bundle, single string) (bool, error) {
	orig, err := readBounded(bundle, maxCABundle)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the CA bundle: %w", err)
	}
	if !bytes.Contains(orig, []byte(caBegin)) {
		return false, nil
	}
	if err := replaceFile(bundle, withoutCA(orig)); err != nil {
		return false, err
	}
	if err := os.Remove(single); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("remove %s: %w", single, err)
	}
	return true, nil
}

// withoutCA returns bundle less a CA section an earlier start added.
func withoutCA(bundle []byte) []byte {
	i := bytes.Index(bundle, []byte(caBegin))
	if i < 0 {
		return bundle
	}
	j := bytes.Index(bundle[i:], []byte(caEnd))
	if j < 0 {
		return bundle[:i] // cut short: drop the rest of it
	}
	return append(bundle[:i:i], bundle[i+j+len(caEnd):]...)
}

// replaceFile writes data to a new file beside path, mode 0644, and
// renames it over path.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readBounded reads path, failing past max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}
