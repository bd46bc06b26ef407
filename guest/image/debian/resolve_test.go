package debian

import (
	"strings"
	"testing"
)

const testPackages = `Package: app
Version: 1.0-1
Architecture: amd64
Pre-Depends: prelib
Depends: libc6 (>= 2.34), mail-transport-agent, alt-missing | alt-b | alt-c, awk, py:any (>= 3.11)
Filename: pool/main/a/app/app_1.0-1_amd64.deb
Size: 100
Installed-Size: 4
SHA256: 00

Package: prelib
Version: 2
Architecture: amd64
Depends: libc6
Size: 10

Package: libc6
Version: 2.36-9+deb12u4
Architecture: amd64
Priority: optional
Depends: libgcc-s1
Size: 1000

Package: libgcc-s1
Version: 12.2.0-14
Architecture: amd64
Depends: libc6 (>= 2.35), gcc-12-base
Size: 20

Package: gcc-12-base
Version: 12.2.0-14
Architecture: amd64

Package: exim4
Version: 4.96-15
Architecture: amd64
Priority: standard
Provides: mail-transport-agent

Package: postfix
Version: 3.7.11-0
Architecture: amd64
Priority: optional
Provides: mail-transport-agent

Package: alt-b
Version: 1
Architecture: all

Package: alt-c
Version: 1
Architecture: all

Package: mawk
Version: 1.3.4
Architecture: amd64
Priority: required
Provides: awk

Package: gawk
Version: 1:5.2.1-2
Architecture: amd64
Priority: optional
Provides: awk

Package: py
Version: 3.11.2-1+b1
Architecture: amd64
Multi-Arch: allowed
Description: multi-line
 description with: a colon
 .
 and a paragraph

Package: uses-gawk
Version: 1
Architecture: all
Depends: gawk, awk

Package: old-need
Version: 1
Architecture: all
Depends: libc6 (>= 2.40)

Package: needs-missing
Version: 1
Architecture: all
Depends: ghost

Package: cyc-a
Version: 1
Architecture: all
Depends: cyc-b

Package: cyc-b
Version: 1
Architecture: all
Depends: cyc-a | cyc-c

Package: versioned-virtual
Version: 1
Architecture: all
Depends: pyvirt (>= 2)

Package: provides-v1
Version: 9
Architecture: all
Provides: pyvirt (= 1)

Package: provides-v3
Version: 1
Architecture: all
Provides: pyvirt (= 3)

Package: provides-unversioned
Version: 1
Architecture: all
Provides: pyvirt
`

func testIndex(t *testing.T) *Index {
	t.Helper()
	pkgs, err := ParsePackages(strings.NewReader(testPackages))
	if err != nil {
		t.Fatal(err)
	}
	// A second, older copy of libc6 must not displace the newer one.
	pkgs = append(pkgs, Package{Name: "libc6", Version: "2.31-13"})
	return NewIndex("bookworm/main for amd64", pkgs)
}

func names(pkgs []Package) string {
	var n []string
	for _, p := range pkgs {
		n = append(n, p.Name)
	}
	return strings.Join(n, " ")
}

func TestParsePackages(t *testing.T) {
	ix := testIndex(t)
	app, ok := ix.Lookup("app")
	if !ok {
		t.Fatal("app not indexed")
	}
	want := Package{Name: "app", Version: "1.0-1", Architecture: "amd64", Filename: "pool/main/a/app/app_1.0-1_amd64.deb",
		SHA256: "00", Size: 100, InstalledSize: 4096, PreDepends: "prelib",
		Depends: "libc6 (>= 2.34), mail-transport-agent, alt-missing | alt-b | alt-c, awk, py:any (>= 3.11)"}
	if app != want {
		t.Errorf("app = %+v\nwant %+v", app, want)
	}
	if libc, _ := ix.Lookup("libc6"); libc.Version != "2.36-9+deb12u4" {
		t.Errorf("libc6 version = %s, want the newer of two", libc.Version)
	}
	if _, ok := ix.Lookup("awk"); ok {
		t.Error("Lookup found a virtual package")
	}
	if _, err := ParsePackages(strings.NewReader("Version: 1\n\n")); err == nil {
		t.Error("a stanza without Package was accepted")
	}
}

func TestResolve(t *testing.T) {
	ix := testIndex(t)
	tests := []struct {
		name    string
		in      []string
		want    string // names, sorted
		wantErr string
	}{
		{
			name: "transitive, alternatives, virtual, pre-depends, arch qualifier",
			in:   []string{"app"},
			want: "alt-b app exim4 gcc-12-base libc6 libgcc-s1 mawk prelib py",
		},
		{
			name: "virtual satisfied by an already selected provider",
			in:   []string{"uses-gawk"},
			want: "gawk uses-gawk",
		},
		{
			name: "selected alternative preferred",
			in:   []string{"alt-c", "app"},
			want: "alt-c app exim4 gcc-12-base libc6 libgcc-s1 mawk prelib py",
		},
		{name: "cycle terminates", in: []string{"cyc-a"}, want: "cyc-a cyc-b"},
		{name: "versioned virtual needs a versioned provide", in: []string{"versioned-virtual"}, want: "provides-v3 versioned-virtual"},
		{name: "virtual asked for directly", in: []string{"mail-transport-agent"}, want: "exim4"},
		{name: "empty", in: nil, want: ""},
		{
			name:    "missing names who needed it",
			in:      []string{"needs-missing"},
			wantErr: "package ghost (needed by needs-missing) is not in bookworm/main for amd64",
		},
		{
			name:    "missing asked for",
			in:      []string{"nope"},
			wantErr: "package nope (asked for) is not in bookworm/main for amd64",
		},
		{
			name:    "version constraint violated",
			in:      []string{"old-need"},
			wantErr: "libc6 (>= 2.40) (needed by old-need) cannot be satisfied from bookworm/main for amd64: libc6 has version 2.36-9+deb12u4",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ix.Resolve(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%v) err = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tt.want {
				t.Errorf("Resolve(%v) = %s\nwant %s", tt.in, names(got), tt.want)
			}
			for range 5 {
				again, _ := ix.Resolve(tt.in)
				if names(again) != names(got) {
					t.Fatalf("Resolve is not deterministic: %s then %s", names(got), names(again))
				}
			}
		})
	}
}

func TestParseDeps(t *testing.T) {
	got := parseDeps("libc6 (>= 2.34), a:any | b (<< 2:1.0~rc1) [amd64] <!nocheck>, c:native(=1.0), d (>>1)")
	want := [][]dep{
		{{name: "libc6", op: ">=", version: "2.34"}},
		{{name: "a"}, {name: "b", op: "<<", version: "2:1.0~rc1"}},
		{{name: "c", op: "=", version: "1.0"}},
		{{name: "d", op: ">>", version: "1"}},
	}
	if len(got) != len(want) {
		t.Fatalf("parseDeps = %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("group %d = %v, want %v", i, got[i], want[i])
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Errorf("group %d alt %d = %+v, want %+v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

func TestEssential(t *testing.T) {
	ix := NewIndex("x", []Package{{Name: "z", Version: "1", Essential: "yes"}, {Name: "a", Version: "1", Essential: "yes"}, {Name: "m", Version: "1"}})
	if got := strings.Join(ix.Essential(), " "); got != "a z" {
		t.Errorf("Essential = %q, want \"a z\"", got)
	}
}
