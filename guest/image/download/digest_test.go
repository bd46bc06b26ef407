package download

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"strings"
	"testing"
)

func TestParseSRI(t *testing.T) {
	s512 := sha512.Sum512([]byte("a"))
	s256 := sha256.Sum256([]byte("a"))
	b512 := base64.StdEncoding.EncodeToString(s512[:])
	b256 := base64.StdEncoding.EncodeToString(s256[:])
	tests := []struct {
		in      string
		algo    string
		wantErr string
	}{
		{in: "sha512-" + b512, algo: "sha512"},
		{in: "sha256-" + b256, algo: "sha256"},
		{in: "sha256-" + b256 + " sha512-" + b512, algo: "sha512"},
		{in: "sha1-AAAA sha512-" + b512 + "?opt", algo: "sha512"},
		// The real pinned agent integrity.
		{in: "sha512-9Gn+V7DtJ8M1nztP9CeDVl9g3RtrepI7rOFTyPRRnZe8D6zebIHKmC7OvBauucuAP0X0k85SDN/LPVZyjsGezQ==", algo: "sha512"},
		{in: "", wantErr: "no sha256 or sha512"},
		{in: "sha1-AAAA", wantErr: "no sha256 or sha512"},
		{in: "sha512", wantErr: "want <algo>-<base64>"},
		{in: "sha512-!!!", wantErr: "bad base64"},
		{in: "sha512-" + b256, wantErr: "is 32 bytes, want 64"},
	}
	for _, tt := range tests {
		d, err := ParseSRI(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSRI(%q) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || d.Algo != tt.algo {
			t.Errorf("ParseSRI(%q) = %v, %v; want algo %s", tt.in, d, err, tt.algo)
		}
	}
	d, _ := ParseSRI("sha512-" + b512)
	if string(d.Sum) != string(s512[:]) {
		t.Error("ParseSRI decoded the wrong sum")
	}
}

func TestSHA256Hex(t *testing.T) {
	const h = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
	d, err := SHA256Hex(h)
	if err != nil || d.String() != "sha256:"+h {
		t.Fatalf("SHA256Hex = %v, %v", d, err)
	}
	for _, bad := range []string{"", "zz", h[:10], h + "00"} {
		if _, err := SHA256Hex(bad); err == nil {
			t.Errorf("SHA256Hex(%q) accepted", bad)
		}
	}
}
