package secrets

import (
	"fmt"
	"strings"
)

// The secrets Claude Code and git use; any other valid name is allowed too.
const (
	AnthropicAPIKey      = "ANTHROPIC_API_KEY"
	ClaudeCodeOAuthToken = "CLAUDE_CODE_OAUTH_TOKEN"
	GitHubToken          = "GITHUB_TOKEN"
)

const (
	// MaxNameLen is the longest name a secret may have, in bytes.
	MaxNameLen = 64
	// MaxValueLen is the largest value a secret may hold, in bytes. The
	// macOS Keychain, written through /usr/bin/security, holds less: about
	// 3000 bytes (see keychainMaxValueLen).
	MaxValueLen = 64 << 10
)

// ValidName reports whether name may name a secret: it matches
// ^[A-Za-z_][A-Za-z0-9_]*$ and is at most MaxNameLen bytes, so it is also a
// valid environment variable name inside the VM.
func ValidName(name string) bool { return nameProblem(name) == "" }

// checkName returns an ErrBadName error for an invalid name. The name itself
// is never echoed: a person who pastes a token where the name belongs would
// otherwise see it printed (and logged) back.
func checkName(op, name string) error {
	if p := nameProblem(name); p != "" {
		return &opError{op: op, kind: ErrBadName,
			msg: "invalid secret name (" + p + "): a name is letters, digits and _, does not start with a digit, and is at most 64 characters, like GITHUB_TOKEN"}
	}
	return nil
}

// nameProblem says what is wrong with name, in words that do not repeat it,
// or "" when nothing is.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("it is %d bytes long", len(name))
	case name[0] >= '0' && name[0] <= '9':
		return "it starts with a digit"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			continue
		}
		if c < 0x80 && c > 0x20 && c != 0x7f {
			return fmt.Sprintf("it contains %q", string(c))
		}
		return "it contains a space, a control character or a non-ASCII character"
	}
	return ""
}

// checkValue returns an ErrBadValue error for a value that cannot be
// stored; max is the platform's limit for this name. The message gives
// sizes, never content.
func checkValue(name, value string, max int) error {
	var p string
	switch {
	case value == "":
		p = "the value is empty: give the secret's value"
	case strings.IndexByte(value, 0) >= 0:
		p = "the value contains a NUL byte, which an environment variable cannot hold"
	case len(value) > max:
		p = fmt.Sprintf("the value is %d bytes; the keyring here holds at most %d", len(value), max)
	default:
		return nil
	}
	return &opError{op: "set", name: name, kind: ErrBadValue, msg: p}
}
