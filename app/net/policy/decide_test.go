package policy

import (
	"net/netip"
	"sync"
	"testing"
)

// settings is each layer's text; an empty text is no layer.
type settings struct{ sandbar, project, repo, session string }

func compose(t testing.TB, mode Mode, s settings) (*Policy, []string) {
	t.Helper()
	var layers []Layer
	for _, l := range []struct {
		src  Source
		text string
	}{{SourceSandbar, s.sandbar}, {SourceProject, s.project}, {SourceRepository, s.repo}, {SourceSession, s.session}} {
		if l.text == "" {
			continue
		}
		f, err := Parse([]byte(l.text), l.src)
		if err != nil {
			t.Fatalf("%s settings: %v", l.src, err)
		}
		layers = append(layers, Layer{Source: l.src, File: f})
	}
	return Compose(mode, layers...)
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestDecide(t *testing.T) {
	const openProject = "mode open\n"
	for _, tc := range []struct {
		name   string
		mode   Mode // the session's choice
		s      settings
		d      Dest
		allow  bool
		rule   string // the deciding rule's String, "" for none
		reason string
	}{
		// Mode off.
		{name: "mode off denies a default name", s: settings{project: "mode off"},
			d: Dest{Name: "api.anthropic.com", Port: 443}, reason: "the session's network is off"},
		{name: "session's off beats the project's open", mode: ModeOff, s: settings{project: openProject},
			d: Dest{Name: "example.com", Addr: addr("93.184.216.34"), Port: 443}, reason: "the session's network is off"},
		{name: "mode off beats an explicit allow of loopback", mode: ModeOff, s: settings{project: "allow 127.0.0.1:5432"},
			d: Dest{Addr: addr("127.0.0.1"), Port: 5432}, reason: "the session's network is off"},

		// Deny wins over allow, in every mode.
		{name: "deny beats allow in the same file", s: settings{project: "allow example.com\ndeny example.com"},
			d: Dest{Name: "example.com", Port: 443}, rule: "deny example.com",
			reason: `denied by "deny example.com" in the project's settings`},
		{name: "repository deny beats a default allow", s: settings{repo: "deny github.com"},
			d: Dest{Name: "github.com", Port: 443}, rule: "deny github.com",
			reason: `denied by "deny github.com" in .sandbar/network`},
		{name: "sandbar deny beats a session allow", s: settings{sandbar: "deny paste.example.com:*", session: "allow paste.example.com"},
			d: Dest{Name: "paste.example.com", Port: 443}, rule: "deny paste.example.com:*",
			reason: `denied by "deny paste.example.com:*" in Sandbar's settings`},
		{name: "wildcard deny in mode open", s: settings{project: openProject + "deny *.example.com:*"},
			d: Dest{Name: "ads.example.com", Addr: addr("93.184.216.34"), Port: 8080}, rule: "deny *.example.com:*",
			reason: `denied by "deny *.example.com:*" in the project's settings`},
		{name: "address deny beats a name allow", s: settings{project: "allow example.com\ndeny 93.184.216.0/24:*"},
			d: Dest{Name: "example.com", Addr: addr("93.184.216.34"), Port: 443}, rule: "deny 93.184.216.0/24:*",
			reason: `denied by "deny 93.184.216.0/24:*" in the project's settings`},
		{name: "ipv4 deny catches the address in NAT64", s: settings{project: openProject + "deny 1.2.3.4:*"},
			d: Dest{Addr: addr("64:ff9b::102:304"), Port: 443}, rule: "deny 1.2.3.4:*",
			reason: `denied by "deny 1.2.3.4:*" in the project's settings`},
		{name: "ipv4 deny catches the address in 6to4", s: settings{project: openProject + "deny 1.2.3.4:*"},
			d: Dest{Addr: addr("2002:102:304::1"), Port: 443}, rule: "deny 1.2.3.4:*",
			reason: `denied by "deny 1.2.3.4:*" in the project's settings`},
		{name: "ipv4 deny catches the mapped address", s: settings{project: openProject + "deny 1.2.3.4"},
			d: Dest{Addr: addr("::ffff:1.2.3.4"), Port: 443}, rule: "deny 1.2.3.4",
			reason: `denied by "deny 1.2.3.4" in the project's settings`},
		{name: "deny on another port lets it through", s: settings{project: openProject + "deny example.com:22"},
			d: Dest{Name: "example.com", Port: 443}, allow: true, reason: "the session's network is open"},

		// Closed addresses, each asked for by name.
		{name: "127.0.0.2 in mode open", s: settings{project: openProject},
			d:      Dest{Addr: addr("127.0.0.2"), Port: 5432},
			reason: `127.0.0.2 is host loopback, closed to sessions: to allow it, add "allow 127.0.0.2:5432" in Sandbar's or the project's network settings`},
		{name: "::1", s: settings{project: openProject},
			d:      Dest{Addr: addr("::1"), Port: 22},
			reason: `::1 is host loopback, closed to sessions: to allow it, add "allow [::1]:22" in Sandbar's or the project's network settings`},
		{name: "[::ffff:127.0.0.1] given as the name", s: settings{project: openProject},
			d:      Dest{Name: "[::ffff:127.0.0.1]", Port: 80},
			reason: `127.0.0.1 is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:80" in Sandbar's or the project's network settings`},
		{name: "::ffff:127.0.0.1 given as the address", s: settings{project: openProject},
			d:      Dest{Addr: addr("::ffff:127.0.0.1"), Port: 80},
			reason: `127.0.0.1 is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:80" in Sandbar's or the project's network settings`},
		{name: "0.0.0.0", s: settings{project: openProject},
			d:      Dest{Addr: addr("0.0.0.0"), Port: 8080},
			reason: `0.0.0.0 is "this host" (0.0.0.0/8), which reaches the host itself, closed to sessions: to allow it, add "allow 0.0.0.0:8080" in Sandbar's or the project's network settings`},
		{name: "10.0.2.2, the usual NAT host", s: settings{project: openProject},
			d:      Dest{Addr: addr("10.0.2.2"), Port: 22},
			reason: `10.0.2.2 is a private network address (RFC 1918), closed to sessions: to allow it, add "allow 10.0.2.2:22" in Sandbar's or the project's network settings`},
		{name: "169.254.169.254 even under allow *:*", s: settings{project: "allow *:*"},
			d:      Dest{Addr: addr("169.254.169.254"), Port: 80},
			reason: `169.254.169.254 is link-local (cloud metadata), closed to sessions: to allow it, add "allow 169.254.169.254:80" in Sandbar's or the project's network settings`},
		{name: "100.100.100.100", s: settings{project: openProject},
			d:      Dest{Addr: addr("100.100.100.100"), Port: 53, Proto: UDP},
			reason: `100.100.100.100 is shared address space (CGNAT, RFC 6598), closed to sessions: to allow it, add "allow 100.100.100.100:53/udp" in Sandbar's or the project's network settings`},
		{name: "198.18.0.5, a Sandbar DNS answer", s: settings{project: openProject},
			d:      Dest{Addr: addr("198.18.0.5"), Port: 443},
			reason: `198.18.0.5 is one of Sandbar's DNS answers (198.18.0.0/15), not a real address, closed to sessions: to allow it, add "allow 198.18.0.5:443" in Sandbar's or the project's network settings`},
		{name: "fd00::1", s: settings{project: openProject},
			d:      Dest{Addr: addr("fd00::1"), Port: 443},
			reason: `fd00::1 is a private network address (unique local, fc00::/7), closed to sessions: to allow it, add "allow [fd00::1]:443" in Sandbar's or the project's network settings`},
		{name: "64:ff9b::7f00:1, loopback through NAT64", s: settings{project: openProject},
			d:      Dest{Addr: addr("64:ff9b::7f00:1"), Port: 443},
			reason: `64:ff9b::7f00:1 is NAT64 for 127.0.0.1, which is host loopback, closed to sessions: to allow it, add "allow [64:ff9b::7f00:1]:443" in Sandbar's or the project's network settings`},
		{name: "2002:7f00:1::1, loopback through 6to4", s: settings{project: openProject},
			d:      Dest{Addr: addr("2002:7f00:1::1"), Port: 443},
			reason: `2002:7f00:1::1 is 6to4 for 127.0.0.1, which is host loopback, closed to sessions: to allow it, add "allow [2002:7f00:1::1]:443" in Sandbar's or the project's network settings`},
		{name: "fe80::1 with a zone", s: settings{project: openProject},
			d:      Dest{Addr: addr("fe80::1%eth0"), Port: 22},
			reason: `fe80::1 is link-local, closed to sessions: to allow it, add "allow [fe80::1]:22" in Sandbar's or the project's network settings`},
		{name: "udp broadcast", s: settings{project: "allow *:*/udp"},
			d:      Dest{Addr: addr("255.255.255.255"), Port: 67, Proto: UDP},
			reason: `255.255.255.255 is broadcast, closed to sessions: to allow it, add "allow 255.255.255.255:67/udp" in Sandbar's or the project's network settings`},
		{name: "DNS rebinding: an allowed name resolving to loopback", s: settings{project: "allow example.com"},
			d:      Dest{Name: "example.com", Addr: addr("127.0.0.1"), Port: 443},
			reason: `example.com is 127.0.0.1, which is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:443" in Sandbar's or the project's network settings`},
		{name: "DNS rebinding: the first call, before resolving, allows", s: settings{project: "allow example.com"},
			d: Dest{Name: "example.com", Port: 443}, allow: true, rule: "allow example.com",
			reason: `allowed by "allow example.com" in the project's settings`},
		{name: "a default name resolving to a private address", s: settings{},
			d:      Dest{Name: "github.com", Addr: addr("10.1.2.3"), Port: 443},
			reason: `github.com is 10.1.2.3, which is a private network address (RFC 1918), closed to sessions: to allow it, add "allow 10.1.2.3:443" in Sandbar's or the project's network settings`},

		{name: "a default rule with its port written does not open", s: settings{},
			d:      Dest{Name: "deb.debian.org", Addr: addr("192.168.1.10"), Port: 80},
			reason: `deb.debian.org is 192.168.1.10, which is a private network address (RFC 1918), closed to sessions: to allow it, add "allow 192.168.1.10:80" in Sandbar's or the project's network settings`},

		// What opens a closed address, and what does not.
		{name: "project's address allow opens loopback", s: settings{project: "allow 127.0.0.1:5432"},
			d: Dest{Addr: addr("127.0.0.1"), Port: 5432}, allow: true, rule: "allow 127.0.0.1:5432",
			reason: `allowed by "allow 127.0.0.1:5432" in the project's settings, which opens 127.0.0.1 (host loopback)`},
		{name: "an address allow opens only its port", s: settings{project: "allow 127.0.0.1:5432"},
			d:      Dest{Addr: addr("127.0.0.1"), Port: 5433},
			reason: `127.0.0.1 is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:5433" in Sandbar's or the project's network settings`},
		{name: "an address allow opens only its protocol", s: settings{project: "allow 127.0.0.1:5353"},
			d:      Dest{Addr: addr("127.0.0.1"), Port: 5353, Proto: UDP},
			reason: `127.0.0.1 is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:5353/udp" in Sandbar's or the project's network settings`},
		{name: "an address allow without a port opens 443", s: settings{sandbar: "allow 10.0.0.5"},
			d: Dest{Addr: addr("10.0.0.5"), Port: 443}, allow: true, rule: "allow 10.0.0.5",
			reason: `allowed by "allow 10.0.0.5" in Sandbar's settings, which opens 10.0.0.5 (a private network address (RFC 1918))`},
		{name: "sandbar's range allow opens 10.0.2.2", s: settings{sandbar: "allow 10.0.0.0/8:5432"},
			d: Dest{Addr: addr("10.0.2.2"), Port: 5432}, allow: true, rule: "allow 10.0.0.0/8:5432",
			reason: `allowed by "allow 10.0.0.0/8:5432" in Sandbar's settings, which opens 10.0.2.2 (a private network address (RFC 1918))`},
		{name: "a mapped-address allow opens the IPv4", s: settings{project: "allow [::ffff:127.0.0.1]:22"},
			d: Dest{Addr: addr("127.0.0.1"), Port: 22}, allow: true, rule: "allow 127.0.0.1:22",
			reason: `allowed by "allow 127.0.0.1:22" in the project's settings, which opens 127.0.0.1 (host loopback)`},
		{name: "session's address allow opens loopback", s: settings{session: "allow 127.0.0.1:8080"},
			d: Dest{Addr: addr("127.0.0.1"), Port: 8080}, allow: true, rule: "allow 127.0.0.1:8080",
			reason: `allowed by "allow 127.0.0.1:8080" in the rules allowed for this session, which opens 127.0.0.1 (host loopback)`},
		// A session's rule is what "Allow" adds for a denial the guest
		// caused, for a name the guest chose: whoever answers that name's
		// DNS could point it at the host's loopback once it is allowed.
		{name: "session's exact name does not open the address its DNS gives",
			s:      settings{session: "allow cdn.example.net:8080"},
			d:      Dest{Name: "cdn.example.net", Addr: addr("127.0.0.1"), Port: 8080},
			reason: `cdn.example.net is 127.0.0.1, which is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:8080" in Sandbar's or the project's network settings`},
		{name: "session's exact name does not open cloud metadata",
			s:      settings{session: "allow cdn.example.net:80"},
			d:      Dest{Name: "cdn.example.net", Addr: addr("169.254.169.254"), Port: 80},
			reason: `cdn.example.net is 169.254.169.254, which is link-local (cloud metadata), closed to sessions: to allow it, add "allow 169.254.169.254:80" in Sandbar's or the project's network settings`},
		{name: "session's exact name opens a name the person's settings map",
			s: settings{sandbar: "host db.test 127.0.0.1", session: "allow db.test:5432"},
			d: Dest{Name: "db.test", Addr: addr("127.0.0.1"), Port: 5432}, allow: true, rule: "allow db.test:5432",
			reason: `allowed by "allow db.test:5432" in the rules allowed for this session, which opens 127.0.0.1 (host loopback)`},
		{name: "session's exact name opens a mapped name only at its mapped address",
			s:      settings{sandbar: "host db.test 127.0.0.1", session: "allow db.test:5432"},
			d:      Dest{Name: "db.test", Addr: addr("127.0.0.2"), Port: 5432},
			reason: `db.test is 127.0.0.2, which is host loopback, closed to sessions: to allow it, add "allow 127.0.0.2:5432" in Sandbar's or the project's network settings`},
		{name: "exact name with its port opens a host-mapped name, before any lookup",
			s: settings{project: "host db.internal 10.0.0.5\nallow db.internal:5432"},
			d: Dest{Name: "db.internal", Port: 5432}, allow: true, rule: "allow db.internal:5432",
			reason: `allowed by "allow db.internal:5432" in the project's settings, which opens 10.0.0.5 (a private network address (RFC 1918))`},
		{name: "exact name with its port does not open what its DNS gives",
			s:      settings{sandbar: "allow localhost:5432"},
			d:      Dest{Name: "LOCALHOST.", Addr: addr("127.0.0.1"), Port: 5432},
			reason: `localhost is 127.0.0.1, which is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:5432" in Sandbar's or the project's network settings`},
		{name: "a name and its private address allowed together open it",
			s: settings{project: "allow db.internal:5432\nallow 10.0.0.0/24:5432"},
			d: Dest{Name: "db.internal", Addr: addr("10.0.0.5"), Port: 5432}, allow: true, rule: "allow 10.0.0.0/24:5432",
			reason: `allowed by "allow 10.0.0.0/24:5432" in the project's settings, which opens 10.0.0.5 (a private network address (RFC 1918))`},
		{name: "a project's exact name with its port opens the address a host line maps it to",
			s: settings{project: "host db.internal 10.0.0.5\nallow db.internal:5432"},
			d: Dest{Name: "db.internal", Addr: addr("10.0.0.5"), Port: 5432}, allow: true, rule: "allow db.internal:5432",
			reason: `allowed by "allow db.internal:5432" in the project's settings, which opens 10.0.0.5 (a private network address (RFC 1918))`},
		{name: "exact name without a port does not open", s: settings{project: "host db.internal 10.0.0.5\nallow db.internal"},
			d:      Dest{Name: "db.internal", Port: 443},
			reason: `db.internal is 10.0.0.5, which is a private network address (RFC 1918), closed to sessions: to allow it, add "allow db.internal:443" in Sandbar's or the project's network settings`},
		{name: "wildcard with a port does not open", s: settings{project: "allow *.internal:5432"},
			d:      Dest{Name: "db.internal", Addr: addr("10.0.0.5"), Port: 5432},
			reason: `db.internal is 10.0.0.5, which is a private network address (RFC 1918), closed to sessions: to allow it, add "allow 10.0.0.5:5432" in Sandbar's or the project's network settings`},
		{name: "* with every port does not open", s: settings{project: "allow *:*"},
			d:      Dest{Addr: addr("127.0.0.1"), Port: 22},
			reason: `127.0.0.1 is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:22" in Sandbar's or the project's network settings`},
		{name: "repository's allow 127.0.0.1:22 does not open it", s: settings{repo: "allow 127.0.0.1:22"},
			d:      Dest{Addr: addr("127.0.0.1"), Port: 22},
			reason: `127.0.0.1 is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:22" in Sandbar's or the project's network settings`},
		{name: "repository's exact name with a port does not open", s: settings{repo: "allow localhost:22"},
			d:      Dest{Name: "localhost", Addr: addr("127.0.0.1"), Port: 22},
			reason: `localhost is 127.0.0.1, which is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:22" in Sandbar's or the project's network settings`},
		{name: "mode open does not open loopback", s: settings{project: openProject},
			d:      Dest{Name: "localhost", Addr: addr("127.0.0.1"), Port: 8080},
			reason: `localhost is 127.0.0.1, which is host loopback, closed to sessions: to allow it, add "allow 127.0.0.1:8080" in Sandbar's or the project's network settings`},

		// Mode open.
		{name: "mode open allows a public name", s: settings{project: openProject},
			d: Dest{Name: "example.org", Port: 8443}, allow: true, reason: "the session's network is open"},
		{name: "mode open allows a public address", s: settings{project: openProject},
			d: Dest{Addr: addr("93.184.216.34"), Port: 22}, allow: true, reason: "the session's network is open"},
		{name: "mode open allows a public mapped address", s: settings{project: openProject},
			d: Dest{Addr: addr("::ffff:8.8.8.8"), Port: 53, Proto: UDP}, allow: true, reason: "the session's network is open"},
		{name: "mode open allows public NAT64", s: settings{project: openProject},
			d: Dest{Addr: addr("64:ff9b::808:808"), Port: 443}, allow: true, reason: "the session's network is open"},
		{name: "session's open beats the project's allowlist", mode: ModeOpen, s: settings{project: "mode allowlist"},
			d: Dest{Name: "example.org", Port: 443}, allow: true, reason: "the session's network is open"},

		// Mode allowlist.
		{name: "default allowlist: the model API", s: settings{},
			d: Dest{Name: "api.anthropic.com", Addr: addr("160.79.104.10"), Port: 443}, allow: true, rule: "allow api.anthropic.com",
			reason: `allowed by "allow api.anthropic.com" in Sandbar's default allowlist`},
		{name: "uppercase and trailing-dot name", s: settings{},
			d: Dest{Name: "API.Anthropic.COM.", Port: 443}, allow: true, rule: "allow api.anthropic.com",
			reason: `allowed by "allow api.anthropic.com" in Sandbar's default allowlist`},
		{name: "not in the allowlist", s: settings{},
			d:      Dest{Name: "example.com", Port: 443},
			reason: "example.com:443 (tcp) is not in the session's allowlist"},
		{name: "a default name on another port", s: settings{},
			d:      Dest{Name: "api.anthropic.com", Port: 80},
			reason: "api.anthropic.com:80 (tcp) is not in the session's allowlist"},
		{name: "a default archive on port 80", s: settings{},
			d: Dest{Name: "deb.debian.org", Port: 80}, allow: true, rule: "allow deb.debian.org:80 read",
			reason: `allowed by "allow deb.debian.org:80 read" in Sandbar's default allowlist`},
		{name: "wildcard matches a subdomain", s: settings{project: "allow *.example.com"},
			d: Dest{Name: "www.example.com", Port: 443}, allow: true, rule: "allow *.example.com",
			reason: `allowed by "allow *.example.com" in the project's settings`},
		{name: "wildcard matches at any depth", s: settings{project: "allow *.example.com"},
			d: Dest{Name: "a.b.example.com", Port: 443}, allow: true, rule: "allow *.example.com",
			reason: `allowed by "allow *.example.com" in the project's settings`},
		{name: "wildcard does not match the name itself", s: settings{project: "allow *.example.com"},
			d:      Dest{Name: "example.com", Port: 443},
			reason: "example.com:443 (tcp) is not in the session's allowlist"},
		{name: "wildcard does not match a name that ends the same", s: settings{project: "allow *.example.com"},
			d:      Dest{Name: "badexample.com", Port: 443},
			reason: "badexample.com:443 (tcp) is not in the session's allowlist"},
		{name: "exact name does not match a subdomain", s: settings{project: "allow example.com"},
			d:      Dest{Name: "www.example.com", Port: 443},
			reason: "www.example.com:443 (tcp) is not in the session's allowlist"},
		{name: "* matches any name", s: settings{project: "allow *:22"},
			d: Dest{Name: "git.example.net", Port: 22}, allow: true, rule: "allow *:22",
			reason: `allowed by "allow *:22" in the project's settings`},
		{name: "* matches a public address", s: settings{project: "allow *:22"},
			d: Dest{Addr: addr("93.184.216.34"), Port: 22}, allow: true, rule: "allow *:22",
			reason: `allowed by "allow *:22" in the project's settings`},
		{name: "port range, low end", s: settings{project: "allow example.com:8000-8999"},
			d: Dest{Name: "example.com", Port: 8000}, allow: true, rule: "allow example.com:8000-8999",
			reason: `allowed by "allow example.com:8000-8999" in the project's settings`},
		{name: "port range, high end", s: settings{project: "allow example.com:8000-8999"},
			d: Dest{Name: "example.com", Port: 8999}, allow: true, rule: "allow example.com:8000-8999",
			reason: `allowed by "allow example.com:8000-8999" in the project's settings`},
		{name: "port range, below", s: settings{project: "allow example.com:8000-8999"},
			d:      Dest{Name: "example.com", Port: 7999},
			reason: "example.com:7999 (tcp) is not in the session's allowlist"},
		{name: "port range, above", s: settings{project: "allow example.com:8000-8999"},
			d:      Dest{Name: "example.com", Port: 9000},
			reason: "example.com:9000 (tcp) is not in the session's allowlist"},
		{name: "udp rule allows udp", s: settings{project: "allow time.example.com:123/udp"},
			d: Dest{Name: "time.example.com", Port: 123, Proto: UDP}, allow: true, rule: "allow time.example.com:123/udp",
			reason: `allowed by "allow time.example.com:123/udp" in the project's settings`},
		{name: "udp rule does not allow tcp", s: settings{project: "allow time.example.com:123/udp"},
			d:      Dest{Name: "time.example.com", Port: 123, Proto: TCP},
			reason: "time.example.com:123 (tcp) is not in the session's allowlist"},
		{name: "tcp rule does not allow udp", s: settings{},
			d:      Dest{Name: "api.anthropic.com", Port: 443, Proto: UDP},
			reason: "api.anthropic.com:443 (udp) is not in the session's allowlist"},
		{name: "a name rule does not match an IP literal", s: settings{project: "allow example.com"},
			d:      Dest{Addr: addr("93.184.216.34"), Port: 443},
			reason: "93.184.216.34:443 (tcp) is not in the session's allowlist"},
		{name: "an address rule does not let a name be looked up", s: settings{project: "allow 93.184.216.0/24"},
			d:      Dest{Name: "example.com", Port: 443},
			reason: "example.com:443 (tcp) is not in the session's allowlist"},
		{name: "an address rule matches the resolved address", s: settings{project: "allow 93.184.216.0/24"},
			d: Dest{Name: "example.com", Addr: addr("93.184.216.34"), Port: 443}, allow: true, rule: "allow 93.184.216.0/24",
			reason: `allowed by "allow 93.184.216.0/24" in the project's settings`},
		{name: "an ipv6 address rule", s: settings{project: "allow [2606:4700::/32]:*"},
			d: Dest{Addr: addr("2606:4700::1111"), Port: 853}, allow: true, rule: "allow [2606:4700::/32]:*",
			reason: `allowed by "allow [2606:4700::/32]:*" in the project's settings`},
		{name: "an IPv6 literal not allowed", s: settings{},
			d:      Dest{Addr: addr("2606:4700::1111"), Port: 443},
			reason: "[2606:4700::1111]:443 (tcp) is not in the session's allowlist"},
		{name: "project's defaults off", s: settings{project: "defaults off"},
			d:      Dest{Name: "api.anthropic.com", Port: 443},
			reason: "api.anthropic.com:443 (tcp) is not in the session's allowlist"},
		{name: "sandbar's defaults off", s: settings{sandbar: "defaults off\nallow api.anthropic.com"},
			d:      Dest{Name: "pypi.org", Port: 443},
			reason: "pypi.org:443 (tcp) is not in the session's allowlist"},
		{name: "a repository allow of a public name", s: settings{repo: "allow registry.example.dev"},
			d: Dest{Name: "registry.example.dev", Addr: addr("93.184.216.34"), Port: 443}, allow: true, rule: "allow registry.example.dev",
			reason: `allowed by "allow registry.example.dev" in .sandbar/network`},
		{name: "the session's allow", s: settings{session: "allow example.com:8080"},
			d: Dest{Name: "example.com", Port: 8080}, allow: true, rule: "allow example.com:8080",
			reason: `allowed by "allow example.com:8080" in the rules allowed for this session`},

		// The repository narrows the mode, never widens it.
		{name: "repository mode off", s: settings{project: openProject, repo: "mode off"},
			d: Dest{Name: "api.anthropic.com", Port: 443}, reason: "the session's network is off"},
		{name: "repository mode allowlist narrows open", s: settings{project: openProject, repo: "mode allowlist"},
			d: Dest{Name: "example.org", Port: 443}, reason: "example.org:443 (tcp) is not in the session's allowlist"},
		{name: "repository mode open is ignored", s: settings{repo: "mode open"},
			d: Dest{Name: "example.org", Port: 443}, reason: "example.org:443 (tcp) is not in the session's allowlist"},
		{name: "repository allow * is ignored", s: settings{repo: "allow *:*"},
			d: Dest{Name: "example.org", Port: 443}, reason: "example.org:443 (tcp) is not in the session's allowlist"},
		{name: "repository allow of a top-level domain is ignored", s: settings{repo: "allow *.com"},
			d: Dest{Name: "example.com", Port: 443}, reason: "example.com:443 (tcp) is not in the session's allowlist"},

		// Hostile and odd destinations.
		{name: "octal-looking name", s: settings{project: openProject},
			d:      Dest{Name: "0177.0.0.1", Port: 22},
			reason: `"0177.0.0.1" is not a host name Sandbar will look up: "0177.0.0.1" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{name: "IPv4 as one number", s: settings{project: "allow *:*"},
			d:      Dest{Name: "2130706433", Port: 22},
			reason: `"2130706433" is not a host name Sandbar will look up: "2130706433" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{name: "hex IPv4 name", s: settings{project: openProject},
			d:      Dest{Name: "0x7f.1", Port: 22},
			reason: `"0x7f.1" is not a host name Sandbar will look up: "0x7f.1" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{name: "a name with a space", s: settings{project: openProject},
			d:      Dest{Name: "exa mple.com", Port: 443},
			reason: `"exa mple.com" is not a host name Sandbar will look up: "exa mple.com" has " ": a name has only letters, digits, "-", "_" and dots`},
		{name: "a name with a NUL", s: settings{project: "allow example.com"},
			d:      Dest{Name: "example.com\x00.evil", Port: 443},
			reason: `"example.com\x00.evil" is not a host name Sandbar will look up: "example.com\x00.evil" has "\x00": a name has only letters, digits, "-", "_" and dots`},
		{name: "a non-ASCII name", s: settings{project: openProject},
			d:      Dest{Name: "bücher.de", Port: 443},
			reason: `"bücher.de" is not a host name Sandbar will look up: "bücher.de" is not ASCII: write an international name in punycode (xn--...)`},
		{name: "an unclosed bracket as a name", s: settings{project: openProject},
			d:      Dest{Name: "[::1", Port: 443},
			reason: `"[::1" is not a host name Sandbar will look up: "[::1" has "[": a name has only letters, digits, "-", "_" and dots`},
		{name: "a hex-number name", s: settings{project: openProject},
			d:      Dest{Name: "0x7f.0x0.0x0.0x1", Port: 443},
			reason: `"0x7f.0x0.0x0.0x1" is not a host name Sandbar will look up: "0x7f.0x0.0x0.0x1" is neither a name nor an IPv4 address: write an IPv4 address as four numbers 0-255 without leading zeros, like 10.0.0.1`},
		{name: "a wildcard as a name", s: settings{project: "allow *.example.com"},
			d:      Dest{Name: "*.example.com", Port: 443},
			reason: `"*.example.com" is not a host name Sandbar will look up: "*.example.com" has "*": a name has only letters, digits, "-", "_" and dots`},
		{name: "a literal name and another address", s: settings{project: openProject},
			d:      Dest{Name: "93.184.216.34", Addr: addr("127.0.0.1"), Port: 443},
			reason: "the name \"93.184.216.34\" is the address 93.184.216.34, but the connection goes to 127.0.0.1"},
		{name: "a public IP literal as the name", s: settings{project: "allow 93.184.216.34"},
			d: Dest{Name: "93.184.216.34", Port: 443}, allow: true, rule: "allow 93.184.216.34",
			reason: `allowed by "allow 93.184.216.34" in the project's settings`},
		{name: "port 0", s: settings{project: openProject},
			d: Dest{Name: "example.com"}, reason: "port 0 is not a port a connection can go to"},
		{name: "an unknown protocol", s: settings{project: openProject},
			d: Dest{Name: "example.com", Port: 443, Proto: "sctp"}, reason: `the protocol "sctp" is not tcp or udp`},
		{name: "no host at all", s: settings{project: openProject},
			d: Dest{Port: 443}, reason: "the connection names no host and no address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := compose(t, tc.mode, tc.s)
			got := p.Decide(tc.d)
			rule := ""
			if got.Rule != nil {
				rule = got.Rule.String()
			}
			if got.Allow != tc.allow || rule != tc.rule || got.Reason != tc.reason {
				t.Errorf("Decide(%+v)\n got allow %v, rule %q, reason %s\nwant allow %v, rule %q, reason %s",
					tc.d, got.Allow, rule, got.Reason, tc.allow, tc.rule, tc.reason)
			}
		})
	}
}

// TestDecideRuleIsACopy checks that a Decision cannot change the Policy.
func TestDecideRuleIsACopy(t *testing.T) {
	p, _ := compose(t, "", settings{project: "allow example.com"})
	d := p.Decide(Dest{Name: "example.com", Port: 443})
	if d.Rule == nil {
		t.Fatal("no rule")
	}
	d.Rule.Host = "evil.example"
	if !p.Decide(Dest{Name: "example.com", Port: 443}).Allow || p.Decide(Dest{Name: "evil.example", Port: 443}).Allow {
		t.Error("changing a Decision's Rule changed the Policy")
	}
}

func TestAllowRuleFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Dest
		want string // "" for the zero Rule
	}{
		{"a name", Dest{Name: "Example.COM.", Addr: addr("93.184.216.34"), Port: 8080}, "allow example.com:8080"},
		{"a name on 443 keeps its port", Dest{Name: "example.com", Port: 443}, "allow example.com:443"},
		{"a name that resolved to a closed address", Dest{Name: "cdn.example.net", Addr: addr("127.0.0.1"), Port: 8080}, "allow 127.0.0.1:8080"},
		{"udp", Dest{Name: "time.example.com", Port: 123, Proto: UDP}, "allow time.example.com:123/udp"},
		{"an IPv4 address", Dest{Addr: addr("127.0.0.1"), Port: 5432}, "allow 127.0.0.1:5432"},
		{"a mapped address", Dest{Addr: addr("::ffff:10.0.0.5"), Port: 22}, "allow 10.0.0.5:22"},
		{"an IPv6 address with a zone", Dest{Addr: addr("fe80::1%eth0"), Port: 22}, "allow [fe80::1]:22"},
		{"an IP literal as the name", Dest{Name: "[::1]", Port: 8080}, "allow [::1]:8080"},
		{"a bad name falls back to the address", Dest{Name: "0177.0.0.1", Addr: addr("127.0.0.1"), Port: 22}, "allow 127.0.0.1:22"},
		{"a bad name alone", Dest{Name: "0177.0.0.1", Port: 22}, ""},
		{"no port", Dest{Name: "example.com"}, ""},
		{"an unknown protocol", Dest{Name: "example.com", Port: 1, Proto: "icmp"}, ""},
		{"nothing", Dest{Port: 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := AllowRuleFor(tc.d, SourceSession)
			if tc.want == "" {
				if r != (Rule{}) {
					t.Errorf("AllowRuleFor(%+v) = %+v, want the zero Rule", tc.d, r)
				}
				return
			}
			if r.String() != tc.want || r.Text != tc.want || r.Source != SourceSession || !r.PortGiven {
				t.Errorf("AllowRuleFor(%+v) = %q (text %q, source %q, port given %v), want %q from the session",
					tc.d, r.String(), r.Text, r.Source, r.PortGiven, tc.want)
			}
		})
	}
}

// TestAllowRuleForAllows checks that the rule "Allow" adds does allow the
// connection that was denied, closed addresses included, and nothing on
// another port.
func TestAllowRuleForAllows(t *testing.T) {
	for _, d := range []Dest{
		{Name: "example.com", Addr: addr("93.184.216.34"), Port: 443},
		{Name: "db.internal", Addr: addr("10.0.0.5"), Port: 5432},
		{Addr: addr("127.0.0.1"), Port: 22},
		{Addr: addr("::1"), Port: 8080, Proto: UDP},
		{Name: "localhost", Addr: addr("::ffff:127.0.0.1"), Port: 3000},
	} {
		before, _ := compose(t, "", settings{})
		if before.Decide(d).Allow {
			t.Fatalf("%+v allowed before any rule", d)
		}
		r := AllowRuleFor(d, SourceSession)
		after, _ := Compose("", Layer{Source: SourceSession, File: File{Rules: []Rule{r}}})
		if got := after.Decide(d); !got.Allow {
			t.Errorf("%+v still denied after %q: %s", d, r.String(), got.Reason)
		}
		other := d
		other.Port++
		if got := after.Decide(other); got.Allow {
			t.Errorf("%q also allowed port %d: %s", r.String(), other.Port, got.Reason)
		}
	}
}

// TestDecideConcurrent runs Decide from many goroutines on one Policy;
// with -race it shows the Policy is safe to share.
func TestDecideConcurrent(t *testing.T) {
	p, _ := compose(t, "", settings{project: "host db.internal 10.0.0.5\nallow db.internal:5432\ndeny *.ads.example.com:*"})
	dests := []Dest{
		{Name: "api.anthropic.com", Port: 443},
		{Name: "db.internal", Port: 5432},
		{Name: "x.ads.example.com", Port: 80},
		{Addr: addr("127.0.0.1"), Port: 22},
	}
	want := make([]Decision, len(dests))
	for i, d := range dests {
		want[i] = p.Decide(d)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(dests)
				if got := p.Decide(dests[k]); got.Allow != want[k].Allow || got.Reason != want[k].Reason {
					t.Errorf("Decide(%+v) = %+v, then %+v", dests[k], want[k], got)
					return
				}
				_ = p.Rules()
				_ = p.Hosts()
			}
		})
	}
	wg.Wait()
}
