package keyringtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"
)

const (
	secretsName     = "org.freedesktop.secrets"
	secretsPath     = "/org/freedesktop/secrets"
	loginCollection = "/org/freedesktop/secrets/collection/login"
	defaultAlias    = "/org/freedesktop/secrets/aliases/default"
	readyTimeout    = 10 * time.Second
	stopTimeout     = 5 * time.Second
)

// The variables the session points at its temporary directory. The D-Bus
// daemon and everything it activates (gnome-keyring, gcr-prompter) inherit
// them, so none of them writes to the real home.
var homeVars = []string{"HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"}

// Main runs the tests of a package inside a private D-Bus session with an
// unlocked gnome-keyring, re-executing the test binary under
// dbus-run-session when not already inside one it started. It does not
// return. Without the tools it runs the tests as they are, and those that
// call Require skip.
func Main(m *testing.M) {
	switch os.Getenv(sessionEnv) {
	case "1":
		os.Exit(inside(m))
	case "child":
		os.Exit(m.Run())
	}
	if ok, why := Available(); !ok {
		fmt.Fprintf(os.Stderr, "keyringtest: %s; tests that need the keyring will skip\n", why)
		os.Exit(m.Run())
	}
	os.Exit(outside())
}

// Available reports whether dbus-run-session and gnome-keyring-daemon are
// installed, and if not, what to install.
func Available() (bool, string) {
	var missing []string
	for _, tool := range []string{"dbus-run-session", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return false, strings.Join(missing, " and ") + " not found: " + install
	}
	return true, ""
}

// outside runs the test binary again under dbus-run-session, with a
// temporary home, and returns its exit code once it and the session are
// gone and the home is removed.
func outside() int {
	dir, err := os.MkdirTemp("", "sandbar-keyring-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "keyringtest: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	home := filepath.Join(dir, "home")
	run := filepath.Join(dir, "run")
	for _, d := range []string{home, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			fmt.Fprintf(os.Stderr, "keyringtest: %v\n", err)
			return 1
		}
	}
	restore := map[string]*string{}
	for _, k := range homeVars {
		if v, ok := os.LookupEnv(k); ok {
			restore[k] = &v
		} else {
			restore[k] = nil
		}
	}
	saved, err := json.Marshal(restore)
	if err != nil {
		fmt.Fprintf(os.Stderr, "keyringtest: %v\n", err)
		return 1
	}
	env := without(os.Environ(), append([]string{"DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
		"GNOME_KEYRING_CONTROL", sessionEnv, restoreEnv}, homeVars...)...)
	env = append(env,
		"HOME="+home,
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_RUNTIME_DIR="+run,
		sessionEnv+"=1",
		restoreEnv+"="+string(saved),
	)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "keyringtest: find the test binary: %v\n", err)
		return 1
	}
	cmd := exec.Command("dbus-run-session", append([]string{"--", exe}, os.Args[1:]...)...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	// dbus-run-session stops its bus daemon without waiting for it, and
	// services the bus started may outlive it for a moment: adopt every
	// orphan of the session, so that none is left when Main returns.
	if err := setChildSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "keyringtest: %v\n", err)
		return 1
	}
	defer reapOrphans()
	// Stay alive through ^C (the child gets it too, from the terminal) so
	// the temporary home is removed; pass a SIGTERM on.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "keyringtest: start dbus-run-session: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM {
				_ = cmd.Process.Signal(s)
			}
		case err := <-done:
			var ee *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &ee) && ee.ExitCode() > 0:
				return ee.ExitCode()
			default:
				fmt.Fprintf(os.Stderr, "keyringtest: dbus-run-session: %v\n", err)
				return 1
			}
		}
	}
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

func setChildSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("become the session's subreaper: %w", errno)
	}
	return nil
}

// reapOrphans waits for every remaining child (the orphans of the session
// adopted through the subreaper), killing those still there after
// stopTimeout.
func reapOrphans() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var ws syscall.WaitStatus
			_, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.ECHILD {
				return
			}
		}
	}()
	select {
	case <-done:
		return
	case <-time.After(stopTimeout):
	}
	for _, pid := range children(os.Getpid()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-done
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if child, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			out = append(out, child)
		}
	}
	return out
}

// inside starts gnome-keyring in the private session, waits until it
// serves an unlocked login keyring, runs the tests and stops it.
func inside(m *testing.M) int {
	// Only outside sets both; without them HOME would be the real one.
	if os.Getenv(restoreEnv) == "" {
		fmt.Fprintf(os.Stderr, "keyringtest: %s=1 without %s: the variable is keyringtest.Main's own; unset it\n", sessionEnv, restoreEnv)
		return 1
	}
	home := os.Getenv("HOME")
	logPath := filepath.Join(filepath.Dir(home), "gnome-keyring.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "keyringtest: %v\n", err)
		return 1
	}
	defer logFile.Close()
	// --foreground keeps the daemon our child, so it can be stopped and
	// waited for; --unlock reads the login keyring's password from stdin
	// and, in a fresh HOME, creates that keyring unlocked.
	daemon := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	daemon.Stdin = strings.NewReader(Password)
	daemon.Stdout, daemon.Stderr = logFile, logFile
	daemon.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := daemon.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "keyringtest: start gnome-keyring-daemon: %v\n", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	stop := func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = daemon.Process.Kill()
			<-exited
		}
	}
	if err := waitReady(exited); err != nil {
		stop()
		log, _ := os.ReadFile(logPath)
		fmt.Fprintf(os.Stderr, "keyringtest: gnome-keyring did not come up: %v\n--- gnome-keyring-daemon output:\n%s", err, log)
		return 1
	}
	if err := restoreHome(); err != nil {
		stop()
		fmt.Fprintf(os.Stderr, "keyringtest: %v\n", err)
		return 1
	}
	code := m.Run()
	stop()
	return code
}

// waitReady waits for org.freedesktop.secrets to appear on the bus, by its
// NameOwnerChanged signal, and checks the login keyring is unlocked.
func waitReady(exited <-chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := dbus.ConnectSessionBus(dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("connect to the session bus: %w", err)
	}
	defer conn.Close()
	if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, secretsName)); err != nil {
		return fmt.Errorf("watch the bus: %w", err)
	}
	sigs := make(chan *dbus.Signal, 4)
	conn.Signal(sigs)
	var owned bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, secretsName).Store(&owned); err != nil {
		return fmt.Errorf("ask the bus: %w", err)
	}
	for !owned {
		select {
		case s := <-sigs:
			if s != nil && s.Name == "org.freedesktop.DBus.NameOwnerChanged" && len(s.Body) == 3 {
				if owner, _ := s.Body[2].(string); owner != "" {
					owned = true
				}
			}
		case err := <-exited:
			return fmt.Errorf("gnome-keyring-daemon exited: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("%s did not appear on the bus within %s", secretsName, readyTimeout)
		}
	}
	locked, err := isLocked(ctx, conn)
	switch {
	case err != nil:
		return fmt.Errorf("the login keyring: %w", err)
	case locked:
		return errors.New("the login keyring is locked")
	}
	return nil
}

// restoreHome gives the tests back the caller's HOME and XDG variables; the
// daemon and the bus keep the temporary ones.
func restoreHome() error {
	var saved map[string]*string
	if err := json.Unmarshal([]byte(os.Getenv(restoreEnv)), &saved); err != nil {
		return fmt.Errorf("%s: %w", restoreEnv, err)
	}
	for k, v := range saved {
		var err error
		if v == nil {
			err = os.Unsetenv(k)
		} else {
			err = os.Setenv(k, *v)
		}
		if err != nil {
			return err
		}
	}
	return os.Unsetenv(restoreEnv)
}
