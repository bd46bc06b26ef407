package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sandbar/vm"
	"sandbar/vm/vmtest"
)

// TestDoctorCommand runs `sandbar doctor` whole: with no guest image and no
// keyring it prints every check and exits 1.
func TestDoctorCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("points the Secret Service at a bus that is not there")
	}
	setup := func(t *testing.T) (*Env, *bytes.Buffer) {
		env, out := testEnv(t)
		env.Hypervisors = vm.NewRegistry()
		env.Hypervisors.Register(&vmtest.Hypervisor{}, true)
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
		return env, out
	}
	names := []string{"hypervisor", "guest image", "keyring", "storage", "git"}

	t.Run("text", func(t *testing.T) {
		env, out := setup(t)
		err := Run(context.Background(), env, []string{"doctor"})
		var exit ExitError
		if !errors.As(err, &exit) || exit.Code != 1 {
			t.Fatalf("doctor = %v, want exit status 1 (no image, no keyring)", err)
		}
		var checks []string
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if strings.HasPrefix(line, " ") {
				if !strings.Contains(line, "fix: ") {
					t.Errorf("continuation line %q is not a fix", line)
				}
				continue
			}
			symbol, rest, _ := strings.Cut(line, " ")
			if symbol != "✓" && symbol != "✗" && symbol != "!" {
				t.Errorf("line %q starts with %q, want ✓, ✗ or !", line, symbol)
			}
			checks = append(checks, rest)
		}
		if len(checks) != len(names) {
			t.Fatalf("%d checks printed, want %d:\n%s", len(checks), len(names), out)
		}
		for i, name := range names {
			if !strings.HasPrefix(checks[i], name+" ") {
				t.Errorf("check %d is %q, want %s", i, checks[i], name)
			}
		}
		for _, want := range []string{
			"! hypervisor   vmtest: in-process test machines\n",
			"✗ guest image  no guest image in " + env.Paths.Images + "\n" +
				"               fix: run `sandbar image build` (about a minute, downloads ~150 MB)\n",
			"✗ keyring      the Secret Service cannot be used: ",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		env, out := setup(t)
		err := Run(context.Background(), env, []string{"doctor", "-json"})
		var exit ExitError
		if !errors.As(err, &exit) || exit.Code != 1 {
			t.Fatalf("doctor -json = %v, want exit status 1", err)
		}
		var got []map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("output is not a JSON array: %v\n%s", err, out)
		}
		if len(got) != len(names) {
			t.Fatalf("%d checks, want %d: %s", len(got), len(names), out)
		}
		for i, c := range got {
			for _, key := range []string{"name", "ok", "warn", "detail", "fix"} {
				if _, ok := c[key]; !ok {
					t.Errorf("check %d has no %q: %v", i, key, c)
				}
			}
			if c["name"] != names[i] {
				t.Errorf("check %d is %v, want %s", i, c["name"], names[i])
			}
		}
		if got[0]["ok"] != true || got[0]["warn"] != true {
			t.Errorf("hypervisor = %v, want ok and warn", got[0])
		}
		if got[1]["ok"] != false {
			t.Errorf("guest image = %v, want not ok", got[1])
		}
	})

	t.Run("arguments", func(t *testing.T) {
		env, _ := setup(t)
		var u UsageError
		if err := Run(context.Background(), env, []string{"doctor", "now"}); !errors.As(err, &u) {
			t.Errorf("doctor now = %v, want a usage error", err)
		}
	})
}
