package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestParseFile(t *testing.T) {
	text := "\ufeff# Project network settings\r\n" +
		"mode open\r\n" +
		"\r\n" +
		"allow\tdb.internal:5432   # the test database\r\n" +
		"  deny   *.ads.example.com:*\r\n" +
		"host db.internal 10.0.0.5\r\n" +
		"HOST v6.internal [fd00::5]\r\n" +
		"host mapped.internal ::ffff:10.0.0.6\r\n" +
		"defaults OFF\r\n" +
		"allow [fd00::/8]:22/udp # no newline at the end"
	f, err := Parse([]byte(text), SourceProject)
	if err != nil {
		t.Fatal(err)
	}
	if f.Mode != ModeOpen || !f.NoDefaults {
		t.Errorf("Mode %q, NoDefaults %v; want open, true", f.Mode, f.NoDefaults)
	}
	want := []struct {
		line      int
		text, str string
	}{
		{4, "allow\tdb.internal:5432", "allow db.internal:5432"},
		{5, "deny   *.ads.example.com:*", "deny *.ads.example.com:*"},
		{10, "allow [fd00::/8]:22/udp", "allow [fd00::/8]:22/udp"},
	}
	if len(f.Rules) != len(want) {
		t.Fatalf("%d rules, want %d: %+v", len(f.Rules), len(want), f.Rules)
	}
	for i, w := range want {
		r := f.Rules[i]
		if r.Line != w.line || r.Text != w.text || r.String() != w.str || r.Source != SourceProject {
			t.Errorf("rule %d: line %d, text %q, String %q, source %q; want line %d, text %q, String %q, source project",
				i, r.Line, r.Text, r.String(), r.Source, w.line, w.text, w.str)
		}
	}
	hosts := map[string]netip.Addr{
		"db.internal":     netip.MustParseAddr("10.0.0.5"),
		"v6.internal":     netip.MustParseAddr("fd00::5"),
		"mapped.internal": netip.MustParseAddr("10.0.0.6"),
	}
	if len(f.Hosts) != len(hosts) {
		t.Errorf("hosts %v, want %v", f.Hosts, hosts)
	}
	for n, a := range hosts {
		if f.Hosts[n] != a {
			t.Errorf("host %s = %v, want %v", n, f.Hosts[n], a)
		}
	}
}

func TestParseEmpty(t *testing.T) {
	for _, text := range []string{"", "\n\n", "# only a comment\n", " \t \r\n"} {
		f, err := Parse([]byte(text), SourceSandbar)
		if err != nil || f.Mode != "" || len(f.Rules) != 0 || len(f.Hosts) != 0 || f.NoDefaults {
			t.Errorf("Parse(%q) = %+v, %v; want an empty File", text, f, err)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"line number counts blank and comment lines",
			"# settings\n\nallow exa mple.com\n",
			`line 3: "allow exa mple.com": a host has no spaces: write allow HOST[:PORTS][/tcp|udp] [read|write]`},
		{"line number with CRLF",
			"allow a.com\r\nallow b.com:0\r\n",
			`line 2: "allow b.com:0": "0" is not a port: write a number 1-65535, a range like 8000-8999, or * for every port`},
		{"unknown keyword",
			"permit example.com",
			`line 1: "permit example.com": unknown keyword "permit": a line starts with mode, allow, deny, host or defaults`},
		{"unknown mode",
			"mode closed",
			`line 1: "mode closed": unknown mode "closed": write mode allowlist, mode open or mode off`},
		{"mode without a value",
			"mode",
			`line 1: "mode": write mode allowlist, mode open or mode off`},
		{"two modes",
			"mode open\nmode off",
			`line 2: "mode off": the mode is already set on line 1: keep one mode line`},
		{"host without an address",
			"host db.internal",
			`line 1: "host db.internal": write host NAME ADDRESS, e.g. host db.internal 10.0.0.5`},
		{"host the wrong way round",
			"host 10.0.0.5 db.internal",
			`line 1: "host 10.0.0.5 db.internal": the name comes first, then its address: write host NAME ADDRESS, e.g. host db.internal 10.0.0.5`},
		{"host with a wildcard",
			"host *.internal 10.0.0.5",
			`line 1: "host *.internal 10.0.0.5": "*.internal" has "*": a name has only letters, digits, "-", "_" and dots`},
		{"host with a name for an address",
			"host db.internal db2.internal",
			`line 1: "host db.internal db2.internal": "db2.internal" is not an IP address: write host NAME ADDRESS, e.g. host db.internal 10.0.0.5`},
		{"host with a zone",
			"host db.internal fe80::1%eth0",
			`line 1: "host db.internal fe80::1%eth0": an address with a zone (%eth0) cannot be mapped: leave out the zone`},
		{"host with an unclosed bracket",
			"host db.internal [fd00::5",
			`line 1: "host db.internal [fd00::5": "[fd00::5" has no closing "]": write host NAME ADDRESS, e.g. host db.internal 10.0.0.5`},
		{"a long unknown keyword is cut short",
			strings.Repeat("k", 120) + " example.com",
			`line 1: "` + strings.Repeat("k", 100) + `"...: unknown keyword "` + strings.Repeat("k", 80) + `...": a line starts with mode, allow, deny, host or defaults`},
		{"host mapped twice",
			"host db.internal 10.0.0.5\nhost DB.internal. 10.0.0.6",
			`line 2: "host DB.internal. 10.0.0.6": db.internal is already mapped on line 1: keep one host line for it`},
		{"defaults on",
			"defaults on",
			`line 1: "defaults on": write defaults off to leave out the default allowlist; it is in force unless a line says so`},
		{"non-ascii space",
			"allow\u00a0example.com",
			`line 1: "allow\u00a0example.com": the line holds a non-ASCII character: write an international name in punycode (xn--...), and spaces as plain spaces`},
		{"lone carriage return inside a line",
			"allow a.com\rallow b.com",
			`line 1: "allow a.com\rallow b.com": the line holds the control character "\r": write the rule in plain text`},
		{"line too long, even as a comment",
			"# " + strings.Repeat("x", 4095),
			`line 1: "# ` + strings.Repeat("x", 98) + `"...: the line is 4097 bytes long; a line has at most 4096`},
		{"every bad line, in order",
			"allow a.com:0\nallow b.com\nmode nope\n",
			`line 1: "allow a.com:0": "0" is not a port: write a number 1-65535, a range like 8000-8999, or * for every port` + "\n" +
				`line 3: "mode nope": unknown mode "nope": write mode allowlist, mode open or mode off`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.text), SourceProject)
			if err == nil {
				t.Fatalf("Parse(%q) accepted it: %+v", tc.text, f)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%q)\n got %s\nwant %s", tc.text, err, tc.want)
			}
			if f.Mode != "" || f.Rules != nil || f.Hosts != nil || f.NoDefaults {
				t.Errorf("Parse(%q) returned part of a bad file: %+v", tc.text, f)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Errorf("Parse(%q): no *LineError in %T", tc.text, err)
			}
		})
	}
}

func TestParseManyErrorsAreCounted(t *testing.T) {
	text := strings.Repeat("allow bad..name\n", 25)
	_, err := Parse([]byte(text), SourceProject)
	if err == nil {
		t.Fatal("25 bad lines accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 21 {
		t.Fatalf("%d lines of error, want 20 and a count:\n%s", len(lines), err)
	}
	if !strings.HasPrefix(lines[19], "line 20: ") || lines[20] != "and 5 more bad lines" {
		t.Errorf("last lines %q, %q; want line 20 and \"and 5 more bad lines\"", lines[19], lines[20])
	}
}

func TestParseLimits(t *testing.T) {
	t.Run("text past 1 MiB is refused", func(t *testing.T) {
		text := []byte(strings.Repeat("# padding\n", MaxText/10+1))
		_, err := Parse(text, SourceRepository)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Parse of %d bytes: %v, want ErrTooLarge", len(text), err)
		}
		if want := fmt.Sprintf("the text is %d bytes, more than the 1048576 (1 MiB) Sandbar reads", len(text)); !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	})
	t.Run("exactly 1 MiB is read", func(t *testing.T) {
		text := []byte(strings.Repeat("#", 4000) + "\n")
		text = []byte(strings.Repeat(string(text), MaxText/len(text)))
		text = append(text, strings.Repeat(" ", MaxText-len(text))...)
		if _, err := Parse(text, SourceRepository); err != nil {
			t.Fatalf("Parse of %d bytes: %v", len(text), err)
		}
	})
	t.Run("10000 rules are read", func(t *testing.T) {
		var b strings.Builder
		for i := range MaxRules - 1 {
			fmt.Fprintf(&b, "allow h%d.example.com\n", i)
		}
		b.WriteString("host db.internal 10.0.0.5\n")
		f, err := Parse([]byte(b.String()), SourceProject)
		if err != nil || len(f.Rules)+len(f.Hosts) != MaxRules {
			t.Fatalf("Parse of %d rules: %d read, %v", MaxRules, len(f.Rules)+len(f.Hosts), err)
		}
	})
	for _, last := range []string{"allow one-more.example.com", "host one-more.internal 10.0.0.9"} {
		t.Run("10001st rule is refused: "+strings.Fields(last)[0], func(t *testing.T) {
			var b strings.Builder
			for i := range MaxRules {
				fmt.Fprintf(&b, "deny h%d.example.com\n", i)
			}
			b.WriteString(last + "\n")
			_, err := Parse([]byte(b.String()), SourceProject)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Parse of %d rules: %v, want ErrTooLarge", MaxRules+1, err)
			}
			if want := "line 10001: network rules too large: more than 10000 rules"; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q does not start %q", err, want)
			}
		})
	}
}
