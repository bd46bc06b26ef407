package policy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestComposeMode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session Mode
		s       settings
		want    Mode
		notes   []string
	}{
		{name: "nothing set is allowlist", want: ModeAllowlist},
		{name: "sandbar's mode", s: settings{sandbar: "mode open"}, want: ModeOpen},
		{name: "project's beats sandbar's", s: settings{sandbar: "mode open", project: "mode off"}, want: ModeOff},
		{name: "project's allowlist beats sandbar's open", s: settings{sandbar: "mode open", project: "mode allowlist"}, want: ModeAllowlist},
		{name: "session's beats the project's", session: ModeOpen, s: settings{project: "mode off"}, want: ModeOpen},
		{name: "--no-network", session: ModeOff, s: settings{sandbar: "mode open", project: "mode open"}, want: ModeOff},
		{name: "an unknown session mode is off", session: "wide", want: ModeOff,
			notes: []string{`the network mode "wide" (from the session's choice) is not allowlist, open or off: the session's network is off`}},
		{name: "repository off narrows open", s: settings{project: "mode open", repo: "mode off"}, want: ModeOff,
			notes: []string{".sandbar/network sets mode off, narrowing the network from mode open (from the project's settings)"}},
		{name: "repository allowlist narrows open", s: settings{sandbar: "mode open", repo: "mode allowlist"}, want: ModeAllowlist,
			notes: []string{".sandbar/network sets mode allowlist, narrowing the network from mode open (from Sandbar's settings)"}},
		{name: "repository allowlist narrows the session's open", session: ModeOpen, s: settings{repo: "mode allowlist"}, want: ModeAllowlist,
			notes: []string{".sandbar/network sets mode allowlist, narrowing the network from mode open (from the session's choice)"}},
		{name: "repository open is ignored", s: settings{repo: "mode open"}, want: ModeAllowlist,
			notes: []string{".sandbar/network asks for mode open; a repository cannot open the network: set it in the project's settings"}},
		{name: "repository allowlist does not widen off", s: settings{project: "mode off", repo: "mode allowlist"}, want: ModeOff,
			notes: []string{".sandbar/network asks for mode allowlist; a repository can only narrow the network, and mode off (from the project's settings) is narrower"}},
		{name: "repository's same mode says nothing", s: settings{repo: "mode allowlist"}, want: ModeAllowlist},
		{name: "session rules' mode is ignored", s: settings{session: "mode open"}, want: ModeAllowlist,
			notes: []string{"the session's rules ask for mode open, which is ignored: the mode is chosen when the session starts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, notes := compose(t, tc.session, tc.s)
			if p.Mode() != tc.want {
				t.Errorf("mode %q, want %q", p.Mode(), tc.want)
			}
			if !slices.Equal(notes, tc.notes) {
				t.Errorf("notes\n got %q\nwant %q", notes, tc.notes)
			}
		})
	}
}

func TestComposeRepositoryNotes(t *testing.T) {
	_, notes := compose(t, "", settings{repo: "" +
		"mode open\n" +
		"host db.internal 10.0.0.5\n" +
		"allow *:*\n" +
		"allow *.com\n" +
		"allow 127.0.0.1:22\n" +
		"allow 10.0.0.0/8:5432\n" +
		"allow [64:ff9b::/96]\n" +
		"allow 93.184.216.0/24\n" +
		"allow [2606:4700::/32]:*\n" +
		"allow registry.example.dev\n" +
		"deny *.example.com\n"})
	want := []string{
		".sandbar/network asks for mode open; a repository cannot open the network: set it in the project's settings",
		`.sandbar/network maps db.internal to 10.0.0.5; a repository cannot map names: add "host db.internal 10.0.0.5" in the project's settings`,
		`.sandbar/network line 3 ("allow *:*") is ignored: a repository cannot allow every host: set mode open in the project's settings`,
		`.sandbar/network line 4 ("allow *.com") is ignored: a repository cannot allow a whole top-level domain: allow it in the project's settings`,
		`.sandbar/network line 5 ("allow 127.0.0.1:22") has no effect: 127.0.0.1 is host loopback, which a repository cannot open: to allow it, add "allow 127.0.0.1:22" in Sandbar's or the project's network settings`,
		`.sandbar/network line 6 ("allow 10.0.0.0/8:5432") covers addresses closed to sessions, which a repository cannot open: it allows only the others`,
		`.sandbar/network line 7 ("allow [64:ff9b::/96]") covers addresses closed to sessions, which a repository cannot open: it allows only the others`,
	}
	if !slices.Equal(notes, want) {
		t.Errorf("notes\n got %s\nwant %s", strings.Join(notes, "\n     "), strings.Join(want, "\n     "))
	}
}

func TestComposeHosts(t *testing.T) {
	p, notes := compose(t, "", settings{
		sandbar: "host db.internal 10.0.0.5\nhost cache.internal 10.0.0.6",
		project: "host db.internal 10.0.0.7\nhost v6.internal fd00::7",
		repo:    "host evil.internal 127.0.0.1",
		session: "host s.internal 10.0.0.9",
	})
	want := map[string]netip.Addr{
		"db.internal":    addr("10.0.0.7"), // the project's beats Sandbar's
		"cache.internal": addr("10.0.0.6"),
		"v6.internal":    addr("fd00::7"),
	}
	got := p.Hosts()
	if len(got) != len(want) {
		t.Errorf("hosts %v, want %v", got, want)
	}
	for n, a := range want {
		if got[n] != a {
			t.Errorf("host %s = %v, want %v", n, got[n], a)
		}
	}
	wantNotes := []string{
		`.sandbar/network maps evil.internal to 127.0.0.1; a repository cannot map names: add "host evil.internal 127.0.0.1" in the project's settings`,
		`the session's rules map s.internal to 10.0.0.9, which is ignored: add "host s.internal 10.0.0.9" in Sandbar's or the project's settings`,
	}
	if !slices.Equal(notes, wantNotes) {
		t.Errorf("notes\n got %q\nwant %q", notes, wantNotes)
	}
	got["db.internal"] = addr("127.0.0.1")
	if p.Hosts()["db.internal"] != addr("10.0.0.7") {
		t.Error("changing the map Hosts returned changed the Policy")
	}
}

func TestComposeRules(t *testing.T) {
	p, _ := compose(t, "", settings{
		session: "allow s.example.com",
		repo:    "deny r.example.com",
		project: "allow p.example.com",
		sandbar: "allow b.example.com",
	})
	rules := p.Rules()
	var got []string
	for _, r := range rules[len(Defaults()):] {
		got = append(got, string(r.Source)+": "+r.String())
	}
	want := []string{
		"sandbar: allow b.example.com",
		"project: allow p.example.com",
		"repository: deny r.example.com",
		"session: allow s.example.com",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules after the defaults\n got %q\nwant %q", got, want)
	}
	if !slices.EqualFunc(rules[:len(Defaults())], Defaults(), sameRule) {
		t.Error("the rules do not start with the default allowlist")
	}
	rules[0].Host = "evil.example"
	if p.Rules()[0].Host == "evil.example" {
		t.Error("changing the slice Rules returned changed the Policy")
	}
}

func TestComposeDefaultsOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    settings
		want bool // defaults in force
	}{
		{"none says off", settings{project: "allow a.example.com"}, true},
		{"sandbar", settings{sandbar: "defaults off"}, false},
		{"project", settings{project: "defaults off"}, false},
		{"repository, which only narrows", settings{repo: "defaults off"}, false},
		{"session, ignored", settings{session: "defaults off"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := compose(t, "", tc.s)
			has := slices.ContainsFunc(p.Rules(), func(r Rule) bool { return r.Source == SourceDefault })
			if has != tc.want {
				t.Errorf("defaults in force: %v, want %v", has, tc.want)
			}
		})
	}
}

// TestComposeHandBuilt checks that rules and hosts built without Parse
// meet the same checks, and that odd layers are ignored with a note.
func TestComposeHandBuilt(t *testing.T) {
	p, notes := Compose("",
		Layer{Source: SourceProject, File: File{
			Rules: []Rule{
				{Action: Allow, Host: "Example.COM", PortLo: 443, PortHi: 443, Proto: TCP},
				{Action: "permit", Host: "bad.example.com", PortLo: 443, PortHi: 443, Proto: TCP},
				{Action: Allow, Host: "exa mple.com", PortLo: 443, PortHi: 443, Proto: TCP},
				{Action: Allow, Prefix: netip.MustParsePrefix("::ffff:127.0.0.1/128"), PortLo: 22, PortHi: 22, PortGiven: true, Proto: TCP, Line: 7, Text: "as written"},
			},
			Hosts: map[string]netip.Addr{"DB.Internal.": addr("::ffff:10.0.0.5"), "bad name": addr("10.0.0.6"), "zoned.internal": addr("fe80::1%eth0")},
		}},
		Layer{Source: SourceDefault, File: File{Rules: []Rule{{Action: Allow, Host: "*", PortLo: 1, PortHi: 65535, PortGiven: true, Proto: TCP}}}},
		Layer{Source: "elsewhere", File: File{Mode: ModeOpen}},
	)
	wantNotes := []string{
		"network rules from Sandbar's default allowlist are ignored: the default allowlist is built in, and a layer is Sandbar's, the project's, the repository's or the session's",
		`network rules from an unknown source ("elsewhere") are ignored: the default allowlist is built in, and a layer is Sandbar's, the project's, the repository's or the session's`,
		`a host line in the project's settings is left out: "bad name" has " ": a name has only letters, digits, "-", "_" and dots`,
		"a host line in the project's settings is left out: fe80::1%eth0 is not an address without a zone",
		`a rule in the project's settings is left out: "permit bad.example.com": a rule starts with allow or deny, not "permit": write allow HOST[:PORTS][/tcp|udp] [read|write] or deny HOST[:PORTS][/tcp|udp]`,
		`a rule in the project's settings is left out: "allow exa mple.com": a host has no spaces: write allow HOST[:PORTS][/tcp|udp] [read|write]`,
	}
	if !slices.Equal(notes, wantNotes) {
		t.Errorf("notes\n got %s\nwant %s", strings.Join(notes, "\n     "), strings.Join(wantNotes, "\n     "))
	}
	if p.Mode() != ModeAllowlist {
		t.Errorf("mode %q, want allowlist", p.Mode())
	}
	rules := p.Rules()[len(Defaults()):]
	if len(rules) != 2 || rules[0].String() != "allow example.com" || rules[1].String() != "allow 127.0.0.1:22" ||
		rules[1].Line != 7 || rules[1].Text != "as written" || rules[0].Text != "allow example.com" || rules[1].Source != SourceProject {
		t.Errorf("rules %+v; want allow example.com, then allow 127.0.0.1:22 keeping its line and text", rules)
	}
	if h := p.Hosts(); len(h) != 1 || h["db.internal"] != addr("10.0.0.5") {
		t.Errorf("hosts %v, want db.internal 10.0.0.5", h)
	}
	if d := p.Decide(Dest{Addr: addr("127.0.0.1"), Port: 22}); !d.Allow {
		t.Errorf("the hand-built mapped allow did not open 127.0.0.1:22: %s", d.Reason)
	}
}

// TestComposeNotesAreOneLine checks that text from a layer cannot start a
// new line in the log: whatever is odd in it is escaped.
func TestComposeNotesAreOneLine(t *testing.T) {
	_, notes := Compose("",
		Layer{Source: SourceRepository, File: File{
			Mode:  "open\nfake log line",
			Hosts: map[string]netip.Addr{"evil\nfake log line": addr("10.0.0.1")},
			Rules: []Rule{{Action: Allow, Host: "*", PortLo: 443, PortHi: 443, Proto: TCP, Line: 2, Text: "allow *\nfake log line"}},
		}},
		Layer{Source: SourceSession, File: File{Mode: "off\nfake log line"}},
		Layer{Source: "x\nfake log line"},
	)
	if len(notes) != 5 {
		t.Errorf("%d notes, want 5: %q", len(notes), notes)
	}
	for _, n := range notes {
		if strings.ContainsAny(n, "\n\r") {
			t.Errorf("note holds a line break: %q", n)
		}
	}
}
