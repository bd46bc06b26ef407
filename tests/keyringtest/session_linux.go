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
	"regexp"
	"strconv"
	"strings"
	"sync"
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

func isLocked(ctx context.Context, conn *dbus.Conn) (bool, error) {
	var v dbus.Variant
	err := conn.Object(secretsName, loginCollection).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
		"org.freedesktop.Secret.Collection", "Locked").Store(&v)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("Locked is a %s", v.Signature())
	}
	return b, nil
}

// connect opens a private connection to the session's bus, for Lock and
// Unlock: go-keyring's shared one is left alone.
func connect(ctx context.Context) (*dbus.Conn, error) {
	if !InSession() {
		return nil, errors.New("not inside a keyringtest session: call keyringtest.Main from TestMain, and Require(t)")
	}
	return dbus.ConnectSessionBus(dbus.WithContext(ctx))
}

// Lock locks the default keyring (org.freedesktop.Secret.Service.Lock on
// the default alias), as a screen lock or the person would.
func Lock() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	err = conn.Object(secretsName, secretsPath).CallWithContext(ctx, "org.freedesktop.Secret.Service.Lock", 0,
		[]dbus.ObjectPath{defaultAlias}).Store(&locked, &prompt)
	if err != nil {
		return fmt.Errorf("lock the keyring: %w", err)
	}
	if prompt != "/" {
		return fmt.Errorf("lock the keyring: the service wants a prompt (%s)", prompt)
	}
	if l, err := isLocked(ctx, conn); err != nil || !l {
		return fmt.Errorf("lock the keyring: still unlocked (%v)", err)
	}
	return nil
}

// Unlock unlocks the login keyring with Password, through gnome-keyring's
// own interface for that (the standard Unlock needs a prompt, which cannot
// be shown here).
func Unlock() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	svc := conn.Object(secretsName, secretsPath)
	var out dbus.Variant
	var session dbus.ObjectPath
	if err := svc.CallWithContext(ctx, "org.freedesktop.Secret.Service.OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &session); err != nil {
		return fmt.Errorf("unlock the keyring: open a session: %w", err)
	}
	defer conn.Object(secretsName, session).CallWithContext(ctx, "org.freedesktop.Secret.Session.Close", 0)
	secret := struct {
		Session     dbus.ObjectPath
		Parameters  []byte
		Value       []byte
		ContentType string
	}{session, []byte{}, []byte(Password), "text/plain"}
	if err := svc.CallWithContext(ctx, "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.UnlockWithMasterPassword", 0,
		dbus.ObjectPath(loginCollection), secret).Err; err != nil {
		return fmt.Errorf("unlock the keyring: %w", err)
	}
	if l, err := isLocked(ctx, conn); err != nil || l {
		return fmt.Errorf("unlock the keyring: still locked (%v)", err)
	}
	return nil
}

// StallPrompts stands in for the desktop's prompter (the bus name
// org.gnome.keyring.SystemPrompter, which gcr-prompter normally provides)
// and never shows anything: gnome-keyring's unlock prompt then waits, like
// a dialog a person walked away from. The returned function stops it,
// after which gnome-keyring gives the prompt up; it also runs when t ends.
func StallPrompts(t testing.TB) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The connection outlives ctx, so it is made without it.
	conn.Close()
	conn, err = dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Export(stallingPrompter{}, "/org/gnome/keyring/Prompter", "org.gnome.keyring.internal.Prompter"); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.gnome.keyring.SystemPrompter", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		conn.Close()
		t.Fatalf("own org.gnome.keyring.SystemPrompter: reply %v, %v", reply, err)
	}
	var once sync.Once
	release = func() { once.Do(func() { conn.Close() }) }
	t.Cleanup(release)
	return release
}

// stallingPrompter accepts every request of gcr's prompter protocol and
// never calls back with PromptReady.
type stallingPrompter struct{}

func (stallingPrompter) BeginPrompting(callback dbus.ObjectPath) *dbus.Error { return nil }

func (stallingPrompter) PerformPrompt(callback dbus.ObjectPath, kind string, properties map[string]dbus.Variant, exchange string) *dbus.Error {
	return nil
}

func (stallingPrompter) StopPrompting(callback dbus.ObjectPath) *dbus.Error { return nil }

// RunChild runs the test t again, alone, in a new process of the test
// binary, with env added to its environment, and fails t if it fails. In
// that process InChild reports true and Main runs the tests directly, so
// the test does its real work there: use it for what must not share a
// process with the others, such as godbus's cached session connection.
// With EmptyBus the child gets a private D-Bus session with no services.
func RunChild(t *testing.T, bus Bus, env ...string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("find the test binary: %v", err)
	}
	args := []string{exe, "-test.run=" + runPattern(t.Name()), "-test.count=1", "-test.v"}
	if bus == EmptyBus {
		if ok, why := Available(); !ok {
			t.Skip(why)
		}
		conf := filepath.Join(t.TempDir(), "empty-bus.conf")
		if err := os.WriteFile(conf, []byte(emptyBusConfig), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append([]string{"dbus-run-session", "--config-file=" + conf, "--"}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(without(os.Environ(), sessionEnv, "DISPLAY", "WAYLAND_DISPLAY"), sessionEnv+"=child")
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	t.Logf("child process (%s):\n%s", strings.Join(env, " "), indent(out))
	if err != nil {
		t.Fatalf("child process failed: %v", err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("child process did not pass %s", t.Name())
	}
}

// emptyBusConfig is a session bus that lets everything through and has no
// service directories, so nothing can be activated on it.
const emptyBusConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// runPattern is a -test.run pattern matching exactly the test (or subtest)
// named name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func without(env []string, keys ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, key := range keys {
			if k == key {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

func indent(b []byte) string {
	return "\t" + strings.ReplaceAll(strings.TrimRight(string(b), "\n"), "\n", "\n\t")
}
