package hostproc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestLookupSelf(t *testing.T) {
	p, err := Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.Start == 0 || p.Zombie || p.PID != os.Getpid() {
		t.Errorf("this process: %+v", p)
	}
	exe, _ := os.Executable()
	if base := filepath.Base(exe); !strings.HasPrefix(base, p.Name) || p.Name == "" {
		t.Errorf("name %q is not the start of the executable's %q", p.Name, base)
	}
	if !Running(p.PID, p.Start) || Running(p.PID, p.Start+1) {
		t.Errorf("Running(self) with its own start and another one disagree")
	}
}

// TestLookupChild: a child is seen running, then as a zombie once it has
// exited and before it is waited for, then not at all.
func TestLookupChild(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	p, err := Lookup(pid)
	if err != nil || p.Name != "sleep" || p.Zombie || !Running(pid, p.Start) {
		t.Fatalf("running child: %+v, %v", p, err)
	}
	cmd.Process.Kill()
	// Not yet waited for: a zombie, which Running counts as gone. The
	// kill is asynchronous; the zombie shows once the kernel is done.
	zombie := func() bool { q, err := Lookup(pid); return err == nil && q.Zombie }
	if !within(5*time.Second, zombie) {
		t.Errorf("killed, unreaped child is not a zombie after 5 s")
	}
	if Running(pid, 0) {
		t.Errorf("Running counts a zombie as running")
	}
	cmd.Wait()
	if _, err := Lookup(pid); !IsNoProcess(err) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reaped child: err = %v, want ErrNoProcess", err)
	}
}

func TestLookupNone(t *testing.T) {
	for _, pid := range []int{0, -1, 1 << 30} {
		if _, err := Lookup(pid); !IsNoProcess(err) {
			t.Errorf("Lookup(%d) = %v, want ErrNoProcess", pid, err)
		}
	}
}

func TestBootID(t *testing.T) {
	if BootID() == "" {
		t.Errorf("no boot id on %s", runtime.GOOS)
	}
}

// within reports whether cond holds before d has passed, asking every
// millisecond.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}
