package workspace

import "testing"

func TestIncludePatterns(t *testing.T) {
	t.Parallel()
	ps := parseInclude(`# comment
.env
/root.only
config/*.local
secrets/
!secrets/keep.out
docs/**/*.pdf
\#literal
data/
`)
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".env", true},
		{"a/b/.env", true},
		{".envrc", false},
		{"root.only", true},
		{"sub/root.only", false},
		{"config/app.local", true},
		{"config/deep/app.local", false},
		{"x/config/app.local", false},
		{"secrets/a", true},
		{"secrets/deep/b c", true},
		{"x/secrets/a", true}, // no slash but the trailing one: any depth
		{"secrets", false},    // a file named like the folder pattern
		{"secrets/keep.out", false},
		{"docs/a.pdf", true},
		{"docs/x/y/a.pdf", true},
		{"docs/a.txt", false},
		{"#literal", true},
		{"comment", false},
		{"data/ü ñ.bin", true},
	} {
		if got := includes(ps, tc.path); got != tc.want {
			t.Errorf("includes(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
	for _, tc := range []struct {
		dir  string
		want bool
	}{
		{"config", true},
		{"other", true}, // .env may be anywhere
		{"node_modules", false},
		{"a/node_modules", false},
		{"secrets", true},
	} {
		if got := mayInclude(ps, tc.dir); got != tc.want {
			t.Errorf("mayInclude(%q) = %v, want %v", tc.dir, got, tc.want)
		}
	}
	anchored := parseInclude("config/*.local\nnode_modules/.cache/x\n")
	for _, tc := range []struct {
		dir  string
		want bool
	}{
		{"config", true},
		{"other", false},
		{"config/deep", false},
		{"node_modules", true}, // named explicitly
	} {
		if got := mayInclude(anchored, tc.dir); got != tc.want {
			t.Errorf("anchored: mayInclude(%q) = %v, want %v", tc.dir, got, tc.want)
		}
	}
}

func TestEscapeIgnore(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a b/ü.txt":     "a b/ü.txt",
		"we*ird?[1].md": `we\*ird\?\[1\].md`,
		`back\slash`:    `back\\slash`,
		"trailing  ":    `trailing\ \ `,
		"#hash/!bang":   "#hash/!bang",
	} {
		if got := escapeIgnore(in); got != want {
			t.Errorf("escapeIgnore(%q) = %q, want %q", in, got, want)
		}
	}
}
