package debian

import "testing"

func TestCompareVersions(t *testing.T) {
	// want is the sign of CompareVersions(a, b).
	tests := []struct {
		a, b string
		want int
	}{
		{"1.0", "1.0", 0},
		{"1.0", "1.1", -1},
		{"1.10", "1.9", 1},
		{"1.0-1", "1.0-2", -1},
		{"1.0-10", "1.0-9", 1},
		{"1.0", "1.0-0", 0},
		{"1.0-1", "1.0", 1},
		{"0:1.0", "1.0", 0},
		{"1:0.1", "2.0", 1},
		{"1:1.0", "2:0.1", -1},
		{"10:1", "9:2", 1},
		{"1.0~rc1", "1.0", -1},
		{"1.0~rc1", "1.0~rc2", -1},
		{"1.0~~", "1.0~", -1},
		{"1.0~~a", "1.0~~", 1},
		{"1.0~", "1.0", -1},
		{"1.0", "1.0a", -1},
		{"1.0a", "1.0+", -1},
		{"1.0+", "1.0.", -1},
		{"1.0.", "1.0-", 1}, // '-' only splits the revision; upstream "1.0." vs "1.0"
		{"1.001", "1.1", 0},
		{"1.0.0", "1.0", 1},
		{"2.30-1", "2.30-1+b1", -1},
		{"2.36-9+deb12u4", "2.36-9+deb12u10", -1},
		{"2.36-9+deb12u4", "2.36-9", 1},
		{"1.2.3-1~bpo12+1", "1.2.3-1", -1},
		{"7.88.1-10+deb12u5", "7.88.1-10+deb12u12", -1},
		{"1:9.2p1-2+deb12u3", "1:9.2p1-2+deb12u2", 1},
		{"3.11.2-1+b1", "3.11.2-1", 1},
		{"1.0-1-2", "1.0-1-1", 1}, // the revision is after the last '-'
		{"a", "b", -1},
		{"", "0", 0},
		{"1.2a", "1.2b", -1},
		{"1.2z", "1.2+", -1},
		{"18.19.0+dfsg-6~deb12u2", "18.19.0+dfsg-6", -1},
	}
	sign := func(c int) int {
		switch {
		case c < 0:
			return -1
		case c > 0:
			return 1
		}
		return 0
	}
	for _, tt := range tests {
		if got := sign(CompareVersions(tt.a, tt.b)); got != tt.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := sign(CompareVersions(tt.b, tt.a)); got != -tt.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d (antisymmetry)", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestSatisfies(t *testing.T) {
	tests := []struct {
		v, op, ref string
		want       bool
	}{
		{"2.36-9", ">=", "2.34", true},
		{"2.36-9", ">=", "2.37", false},
		{"2.36-9", "<<", "2.36-9", false},
		{"2.36-9", "<=", "2.36-9", true},
		{"2.36-9", "=", "2.36-9", true},
		{"2.36-9", "=", "2.36-9+b1", false},
		{"2.36-9+b1", ">>", "2.36-9", true},
		{"1:1.0", ">", "2.0", true},
		{"1.0", "<", "1.0", true},
	}
	for _, tt := range tests {
		got, err := Satisfies(tt.v, tt.op, tt.ref)
		if err != nil || got != tt.want {
			t.Errorf("Satisfies(%q %s %q) = %v, %v; want %v", tt.v, tt.op, tt.ref, got, err, tt.want)
		}
	}
	if _, err := Satisfies("1", "~=", "1"); err == nil {
		t.Error("Satisfies accepted an unknown relation")
	}
}
