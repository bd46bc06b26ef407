package supervisor

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSetSudo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sudoers.d", "sandbar-agent")
	s := &session{cfg: Config{SudoersFile: path}}
	agent := User{Name: "agent", UID: 1000}
	if err := s.setSudo(agent, true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "agent ALL=(ALL:ALL) NOPASSWD: ALL\n"; string(b[len(b)-len(want):]) != want {
		t.Errorf("rule = %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o440 {
		t.Errorf("mode = %v, want 0440 (sudo ignores others)", fi.Mode())
	}
	if err := s.setSudo(agent, true); err != nil {
		t.Errorf("second start: %v", err)
	}
	if err := s.setSudo(agent, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("rule still there after off: %v", err)
	}
	if err := s.setSudo(agent, false); err != nil {
		t.Errorf("off twice: %v", err)
	}
	if err := s.setSudo(User{Name: "bad user\nALL", UID: 1001}, true); err == nil {
		t.Error("a name sudoers cannot hold was written")
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	// Root needs no rule; no file configured touches nothing.
	if err := s.setSudo(User{Name: "root"}, true); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("a rule was written for root")
	}
	if err := (&session{}).setSudo(agent, true); err != nil {
		t.Error(err)
	}
}
