package keyringtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
