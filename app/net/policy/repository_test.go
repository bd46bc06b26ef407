package policy

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckRepository: a repository's network file, even trusted, adds
// only names and single addresses on named ports. Each refusal names
// the line, the rule as written and the limit it passes.
func TestCheckRepository(t *testing.T) {
	const advice = "; put wider rules in your own settings: sandbar net rules --project"
	for _, tc := range []struct {
		rule string
		want string // "" when accepted; else the whole message
	}{
		{"allow 0.0.0.0/0:*", "line 2: `allow 0.0.0.0/0:*`: a repository's network file may not use a `*` port" + advice},
		{"allow 0.0.0.0/0:*/udp", "line 2: `allow 0.0.0.0/0:*/udp`: a repository's network file may not use a `*` port" + advice},
		{"allow *.co.uk:*", "line 2: `allow *.co.uk:*`: a repository's network file may not use a `*` port" + advice},
		{"allow *.co.uk", "line 2: `allow *.co.uk`: a repository's network file may not use a wildcard over the public suffix co.uk (Public Suffix List): name the hosts" + advice},
		{"allow *.github.io", "line 2: `allow *.github.io`: a repository's network file may not use a wildcard over the public suffix github.io (Public Suffix List): name the hosts" + advice},
		{"allow *.com:443", "line 2: `allow *.com:443`: a repository's network file may not use a wildcard over the public suffix com (Public Suffix List): name the hosts" + advice},
		{"allow *", "line 2: `allow *`: a repository's network file may not allow every host" + advice},
		{"allow 0.0.0.0/0", "line 2: `allow 0.0.0.0/0`: a repository's network file may not allow a range of addresses (0.0.0.0/0): name single addresses (/32, /128)" + advice},
		{"allow 203.0.113.0/31:22", "line 2: `allow 203.0.113.0/31:22`: a repository's network file may not allow a range of addresses (203.0.113.0/31): name single addresses (/32, /128)" + advice},
		{"allow [2001:db8::/127]:443", "line 2: `allow [2001:db8::/127]:443`: a repository's network file may not allow a range of addresses (2001:db8::/127): name single addresses (/32, /128)" + advice},
		{"allow example.org:8000-8999", "line 2: `allow example.org:8000-8999`: a repository's network file may not allow a range of ports (8000-8999): name each port" + advice},
		{"allow example.org:1-65535", "line 2: `allow example.org:1-65535`: a repository's network file may not use a `*` port" + advice},
		{"allow *.example.org", "line 2: `allow *.example.org`: a repository's network file may not use a wildcard (*.example.org): name each host" + advice},
		{"allow *.amazonaws.com", "line 2: `allow *.amazonaws.com`: a repository's network file may not use a wildcard (*.amazonaws.com): name each host" + advice},
		{"allow www.example.co.uk:8443", ""},
		{"allow example.org", ""},
		{"allow github.io", ""},
		{"allow 203.0.113.7:22", ""},
		{"allow 203.0.113.7/32:22", ""},
		{"allow [2001:db8::1]:443", ""},
		{"allow [2001:db8::1/128]:443", ""},
		{"allow time.example.org:123/udp", ""},
		{"deny *:*", ""}, // a deny only narrows
		{"deny 0.0.0.0/0:*/udp", ""},
	} {
		f, err := Parse([]byte("# the repository's rules\n"+tc.rule+"\n"), SourceRepository)
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		err = CheckRepository(f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.rule, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: accepted, want %q", tc.rule, tc.want)
		case tc.want != "" && err.Error() != tc.want:
			t.Errorf("%s:\n got %s\nwant %s", tc.rule, err, tc.want)
		}
		var re *RepositoryError
		if tc.want != "" && (!errors.As(err, &re) || re.Line != 2) {
			t.Errorf("%s: %v is not a *RepositoryError of line 2", tc.rule, err)
		}
	}

	// One bad line refuses the file, and each bad line is named.
	f, err := Parse([]byte("allow example.org\nallow *.co.uk:*\ndeny evil.example\nallow 10.0.0.0/8:5432\n"), SourceRepository)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckRepository(f)
	if err == nil || !strings.Contains(err.Error(), "line 2: `allow *.co.uk:*`") || !strings.Contains(err.Error(), "line 4: `allow 10.0.0.0/8:5432`") || strings.Contains(err.Error(), "line 1") {
		t.Errorf("two bad lines: %v", err)
	}
}
