package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sandbar/guest/protocol"
)

// credentialHelper hands git the GITHUB_TOKEN from the environment, so
// the token lives only in the agent's environment, never on disk.
const credentialHelper = `!f() { test -n "$GITHUB_TOKEN" && echo username=x-access-token && echo password=$GITHUB_TOKEN; }; f`

// writeGitConfig writes u's ~/.gitconfig: identity, credential helper and
// the workspace as a safe directory (the share may be owned by another
// uid than the agent's).
func writeGitConfig(u User, id *protocol.GitIdentity, dirs ...string) error {
	var b strings.Builder
	if id != nil && (id.Name != "" || id.Email != "") {
		b.WriteString("[user]\n")
		if id.Name != "" {
			fmt.Fprintf(&b, "\tname = %s\n", gitQuote(id.Name))
		}
		if id.Email != "" {
			fmt.Fprintf(&b, "\temail = %s\n", gitQuote(id.Email))
		}
	}
	fmt.Fprintf(&b, "[credential]\n\thelper = %s\n", gitQuote(credentialHelper))
	b.WriteString("[safe]\n")
	seen := map[string]bool{}
	for _, d := range dirs {
		if d != "" && !seen[d] {
			seen[d] = true
			fmt.Fprintf(&b, "\tdirectory = %s\n", gitQuote(d))
		}
	}
	if err := os.MkdirAll(u.Home, 0o755); err != nil {
		return fmt.Errorf("create home %s: %w", u.Home, err)
	}
	path := filepath.Join(u.Home, ".gitconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if os.Getuid() == 0 && u.UID != 0 {
		if err := os.Lchown(path, u.UID, u.GID); err != nil {
			return fmt.Errorf("give %s to %s: %w", path, u.Name, err)
		}
	}
	return nil
}

// gitQuote makes s one git config value: double-quoted, with backslash
// and quote escaped, and line breaks (which a value cannot hold) dropped.
func gitQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ", "\r", " ", "\x00", "")
	return `"` + r.Replace(s) + `"`
}
