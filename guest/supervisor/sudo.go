package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// SandbarSudoers is the guest's sudo rule for the agent user.
const SandbarSudoers = "/etc/sudoers.d/sandbar-agent"

// sudoUser is the shape of a user name a sudoers line may hold unquoted.
var sudoUser = regexp.MustCompile(`^[a-z_][a-z0-9_-]*$`)

// setSudo lets u run anything as root inside the VM without a password
// (on), or takes that away (off), by writing or removing
// Config.SudoersFile. The VM is the boundary: root in the guest reaches
// nothing of the host's that the agent user cannot. A user that is root
// already needs no rule.
func (s *session) setSudo(u User, on bool) error {
	path := s.cfg.SudoersFile
	if path == "" || u.UID == 0 {
		return nil
	}
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("take sudo away from %s: %w", u.Name, err)
		}
		return nil
	}
	if !sudoUser.MatchString(u.Name) {
		return fmt.Errorf("give %s sudo: the name is not one sudoers can hold", u.Name)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("give %s sudo: %w", u.Name, err)
	}
	// sudo ignores a rule file that is not 0440 root, or whose name has a
	// dot; write it whole, then move it into place.
	tmp := path + "~"
	rule := "# Written by Sandbar at each start; the project's sudo setting decides it.\n" +
		u.Name + " ALL=(ALL:ALL) NOPASSWD: ALL\n"
	if err := os.WriteFile(tmp, []byte(rule), 0o440); err != nil {
		return fmt.Errorf("give %s sudo: %w", u.Name, err)
	}
	if err := os.Chmod(tmp, 0o440); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("give %s sudo: %w", u.Name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("give %s sudo: %w", u.Name, err)
	}
	return nil
}
