//go:build linux

package tests

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair the way the guest supervisor does
// (ptmx, TIOCSPTLCK, TIOCGPTN), so the test can be the person's terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	rc, _ := m.SyscallConn()
	var n uint32
	var ierr error
	rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr == nil {
			n, ierr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN)
		}
	})
	if ierr != nil {
		t.Fatal(ierr)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

func setSize(t *testing.T, f *os.File, rows, cols int) {
	t.Helper()
	rc, _ := f.SyscallConn()
	var err error
	rc.Control(func(fd uintptr) {
		err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// screen is what the terminal has shown.
type screen struct {
	mu     sync.Mutex
	b      bytes.Buffer
	notify chan struct{}
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// count waits until re matches at least n times.
func (s *screen) count(t *testing.T, re string, n int) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(60 * time.Second)
	for len(rx.FindAllString(s.String(), -1)) < n {
		select {
		case <-s.notify:
		case <-deadline:
			t.Fatalf("the terminal never showed %q (%d times); it shows %q", re, n, s.String())
		}
	}
}

// TestShell: `sandbar shell` under a real terminal is the agent user's
// login shell in the VM, sized like the terminal and following its
// resizes, where Ctrl-C interrupts the foreground job and not the shell;
// the terminal is restored and the exit code comes back. Without a
// terminal it reads commands from stdin.
func TestShell(t *testing.T) {
	w := newWorld(t)
	id := w.startID("--repo", w.repo, "--agent", "sleep 600", "--cpus", "1", "--memory", "512", "--disk", "1", "--no-network")
	w.waitState(id, "running")

	master, slave := openPTY(t)
	defer master.Close()
	setSize(t, master, 30, 100)
	cmd := exec.Command(w.bin, "shell", id)
	cmd.Env = append(w.env, "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scr := &screen{notify: make(chan struct{}, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			scr.Write(buf[:n])
			if err != nil {
				return // EIO once sandbar has exited and the slave is closed
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
		slave.Close()
		<-copied
	}()
	typ := func(s string) {
		if _, err := master.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	// The quotes keep the typed line, echoed, from matching the output.
	typ("stty size; tty; echo U''=$USER T''=$TERM; pwd\r")
	scr.count(t, `30 100\r\n/dev/pts/[0-9]+\r\nU=agent T=xterm-256color\r\n/workspace\r\n`, 1)

	// A resize reaches the guest as SIGWINCH does here: ask until it shows.
	setSize(t, master, 40, 120)
	for i := 1; !strings.Contains(scr.String(), "40 120\r\n"); i++ {
		typ("stty size; echo as''ked\r")
		scr.count(t, `asked\r\n`, i)
		if i > 50 {
			t.Fatalf("the guest never saw the resize to 40×120: %q", scr.String())
		}
	}

	// Ctrl-C interrupts the job in the foreground; the shell reads on.
	typ("sh -c 'echo sl\"\"eeping; exec sleep 100'\r")
	scr.count(t, `sleeping\r\n`, 1)
	began := time.Now()
	typ("\x03")
	typ("echo alive''=$?\r")
	scr.count(t, `alive=130\r\n`, 1)
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("Ctrl-C took %v to end sleep 100", took)
	}

	typ("exit 3\r")
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("sandbar shell after exit 3: %v; the terminal shows %q", err, scr.String())
		}
		exited <- err // for the deferred cleanup
	case <-time.After(60 * time.Second):
		t.Fatalf("sandbar shell did not exit after exit 3; the terminal shows %q", scr.String())
	}
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != unix.ICANON|unix.ECHO|unix.ISIG {
		t.Errorf("the terminal was left raw: lflag %#x", tio.Lflag)
	}

	// Without a terminal: pipes, stdin is the script, the code comes back.
	out, errOut, code := w.run("echo hi; echo $USER; [ -t 0 ] || echo no-tty; echo oops >&2; exit 5\n", "shell", id)
	if out != "hi\nagent\nno-tty\n" || errOut != "oops\n" || code != 5 {
		t.Errorf("pipe mode: out %q err %q code %d", out, errOut, code)
	}
	out, _, code = w.run("", "shell", id, "--", "sh", "-c", "echo $0 in $(pwd)")
	if out != "sh in /workspace\n" || code != 0 {
		t.Errorf("shell -- CMD: %q, code %d", out, code)
	}
	_, errOut, code = w.run("", "shell", "nosuchsession")
	if code == 0 || !strings.Contains(errOut, "nosuchsession") {
		t.Errorf("shell in an unknown session: code %d, %q", code, errOut)
	}
}
