package download

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
)

// Digest is the expected hash of a file: the algorithm ("sha256" or
// "sha512") and the raw sum.
type Digest struct {
	Algo string
	Sum  []byte
}

// ParseSRI parses a Subresource Integrity string as npm writes it in
// dist.integrity, e.g. "sha512-<base64>". When several hashes are given
// (space separated), the strongest one this package knows is used.
func ParseSRI(s string) (Digest, error) {
	var best Digest
	for _, f := range strings.Fields(s) {
		algo, b64, ok := strings.Cut(f, "-")
		if !ok {
			return Digest{}, fmt.Errorf("integrity %q: want <algo>-<base64>, e.g. sha512-…: copy it again from the package's dist.integrity", s)
		}
		// An SRI hash may carry options after '?'; they have no meaning here.
		b64, _, _ = strings.Cut(b64, "?")
		sum, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return Digest{}, fmt.Errorf("integrity %q: bad base64 (%w): copy it again from the package's dist.integrity", s, err)
		}
		d := Digest{Algo: algo, Sum: sum}
		if newHash(algo) == nil {
			continue // sha1 and unknown algorithms are not trusted.
		}
		if err := d.validate(); err != nil {
			return Digest{}, fmt.Errorf("integrity %q: %w", s, err)
		}
		if best.Algo == "" || (best.Algo == "sha256" && algo == "sha512") {
			best = d
		}
	}
	if best.Algo == "" {
		return Digest{}, fmt.Errorf("integrity %q: no sha256 or sha512 hash in it: use the package's sha512 dist.integrity", s)
	}
	return best, nil
}

// SHA256Hex returns the Digest of a hex-encoded SHA-256 sum, as Debian's
// Release and Packages files give them.
func SHA256Hex(s string) (Digest, error) { return hexDigest("sha256", s) }

// SHA512Hex returns the Digest of a hex-encoded SHA-512 sum.
func SHA512Hex(s string) (Digest, error) { return hexDigest("sha512", s) }

func hexDigest(algo, s string) (Digest, error) {
	sum, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return Digest{}, fmt.Errorf("%s %q: not hex (%w)", algo, s, err)
	}
	d := Digest{Algo: algo, Sum: sum}
	if err := d.validate(); err != nil {
		return Digest{}, err
	}
	return d, nil
}

// Hex is the sum in lower-case hex.
func (d Digest) Hex() string { return hex.EncodeToString(d.Sum) }

// String is "<algo>:<hex>", the form used in messages and manifests.
func (d Digest) String() string { return d.Algo + ":" + d.Hex() }

// short is the digest cut to a length a person can compare at a glance.
func (d Digest) short() string {
	h := d.Hex()
	if len(h) > 16 {
		h = h[:16] + "…"
	}
	return d.Algo + ":" + h
}

func (d Digest) validate() error {
	h := newHash(d.Algo)
	if h == nil {
		return fmt.Errorf("hash algorithm %q is not supported: use sha256 or sha512", d.Algo)
	}
	if len(d.Sum) != h.Size() {
		return fmt.Errorf("%s sum is %d bytes, want %d: the checksum is truncated or of another kind", d.Algo, len(d.Sum), h.Size())
	}
	return nil
}

func newHash(algo string) hash.Hash {
	switch algo {
	case "sha256":
		return sha256.New()
	case "sha512":
		return sha512.New()
	}
	return nil
}
