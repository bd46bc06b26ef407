package secrets

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNameProblem(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"GITHUB_TOKEN", ""},
		{"_", ""},
		{"a9", ""},
		{"", "it is empty"},
		{"9a", "it starts with a digit"},
		{"A-B", `it contains "-"`},
		{"A B", "it contains a space, a control character or a non-ASCII character"},
		{"Aé", "it contains a space, a control character or a non-ASCII character"},
		{strings.Repeat("A", 65), "it is 65 bytes long"},
	} {
		if got := nameProblem(tc.name); got != tc.want {
			t.Errorf("nameProblem(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestKeychainLimit checks the macOS size limit against the command
// go-keyring builds: a value of the limit fits in 4096 bytes, and one
// byte more that grows the base64 does not.
func TestKeychainLimit(t *testing.T) {
	command := func(service, name string, n int) int {
		v := base64.StdEncoding.EncodeToString(make([]byte, n))
		return len(fmt.Sprintf("add-generic-password -U -s %s -a %s -w %s\n",
			shellQuote(service), shellQuote(name), shellQuote("go-keyring-base64:"+v)))
	}
	for _, service := range []string{"Sandbar", "Sandbar Test's"} {
		for _, name := range []string{"A", "ANTHROPIC_API_KEY", strings.Repeat("N", MaxNameLen)} {
			max := keychainMaxValueLen(service, name)
			if max < 2900 || max > 3100 {
				t.Errorf("%q/%q: limit %d, want about 3000", service, name, max)
			}
			if n := command(service, name, max); n > 4096 {
				t.Errorf("%q/%q: a %d-byte value makes a %d-byte command", service, name, max, n)
			}
			if n := command(service, name, max+1); n <= 4096 {
				t.Errorf("%q/%q: the limit %d is not the largest: %d bytes still fit (%d)", service, name, max, max+1, n)
			}
		}
	}
	if got := shellQuote("it's"); got != `'it'"'"'s'` {
		t.Errorf("shellQuote = %s", got)
	}
}

func TestScrub(t *testing.T) {
	const value = "hunter2-value"
	plain := errors.New("dial unix /x: refused")
	if scrub(plain, value) != plain {
		t.Fatal("scrub replaced an error that does not hold the value")
	}
	leaky := fmt.Errorf("outer: %w", errors.Join(plain, fmt.Errorf("echo %s back", value)))
	got := scrub(leaky, value)
	if strings.Contains(got.Error(), value) || errors.Unwrap(got) != nil {
		t.Fatalf("scrub left %q (unwrappable: %v)", got, errors.Unwrap(got) != nil)
	}
	if !strings.Contains(got.Error(), "echo [redacted] back") {
		t.Fatalf("scrub = %q", got)
	}
}
