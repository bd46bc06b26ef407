package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"

	"sandbar/app/config"
	"sandbar/guest/image"
	"sandbar/vm"
	"sandbar/vm/vmtest"
)

// statusHypervisor is a backend that only answers Check, with st.
type statusHypervisor struct{ st vm.Status }

func (h statusHypervisor) Name() string                    { return "fake" }
func (h statusHypervisor) Check(context.Context) vm.Status { return h.st }
func (h statusHypervisor) Info() vm.Info                   { return vm.Info{} }
func (h statusHypervisor) Boot(context.Context, vm.Spec) (vm.Machine, error) {
	return nil, vm.ErrUnavailable
}

func TestDoctorHypervisor(t *testing.T) {
	registry := func(h vm.Hypervisor) *vm.Registry {
		r := vm.NewRegistry()
		r.Register(h, true)
		return r
	}
	tests := []struct {
		name      string
		hvs       *vm.Registry
		backend   string
		symbol    string
		detail    string
		fix       string
		wantNoFix bool
		summary   string // "": none, the detail is plain already
	}{
		{name: "emulated", hvs: registry(&vmtest.Hypervisor{}), symbol: "!",
			detail: "vmtest: in-process test machines", fix: "only slower", summary: hypervisorSummary(runtime.GOOS, false)},
		{name: "KVM broken", hvs: registry(statusHypervisor{vm.Status{Available: true,
			Detail: "KVM trial boot failed: qemu-system-x86_64: ../accel/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion `ret == cpu->kvm_msr_buf->nmsrs' failed.; falling back to software emulation, ~10x slower"}}),
			symbol: "!", detail: "kvm.c:3183: kvm_buf_set_msrs: Assertion", fix: "the details say what failed", summary: hypervisorSummary(runtime.GOOS, false)},
		{name: "accelerated", hvs: registry(statusHypervisor{vm.Status{Available: true, Accelerated: true, Detail: "QEMU with KVM: trial boot reached the guest init in 80 ms"}}),
			symbol: "✓", detail: "fake: QEMU with KVM: trial boot", wantNoFix: true, summary: hypervisorSummary(runtime.GOOS, true)},
		{name: "unavailable", hvs: registry(statusHypervisor{vm.Status{Detail: "qemu-system-x86_64 is not installed: run `sudo apt install qemu-system-x86`"}}),
			symbol: "✗", detail: "fake: qemu-system-x86_64 is not installed: run `sudo apt install qemu-system-x86`", wantNoFix: true},
		{name: "none wired", symbol: "✗", detail: "no hypervisor backend", fix: "install an official build"},
		{name: "unknown backend", hvs: registry(&vmtest.Hypervisor{}), backend: "bhyve", symbol: "✗",
			detail: `hypervisor "bhyve"`, fix: "set it to one of: vmtest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkHypervisor(context.Background(), tt.hvs, tt.backend)
			assertResult(t, r, "hypervisor", tt.symbol, tt.detail, tt.fix)
			if tt.wantNoFix && r.Fix != "" {
				t.Errorf("fix = %q, want none (the detail says it)", r.Fix)
			}
			if r.Summary != tt.summary {
				t.Errorf("summary = %q, want %q", r.Summary, tt.summary)
			}
		})
	}
}

// TestHypervisorSummary: the plain sentence a window shows above the
// backend's own words.
func TestHypervisorSummary(t *testing.T) {
	tests := []struct {
		goos        string
		accelerated bool
		want        string
	}{
		{"linux", false, "KVM is not usable here — sessions run about 10× slower under emulation."},
		{"linux", true, "KVM works: sessions run at full speed."},
		{"darwin", false, "Virtualization.framework is not in use — sessions run about 10× slower under emulation."},
		{"darwin", true, "Virtualization.framework works: sessions run at full speed."},
	}
	for _, tt := range tests {
		if got := hypervisorSummary(tt.goos, tt.accelerated); got != tt.want {
			t.Errorf("hypervisorSummary(%s, %v) = %q, want %q", tt.goos, tt.accelerated, got, tt.want)
		}
	}
}

// assertResult checks a result's name, verdict, and that its detail and fix
// contain the given text.
func assertResult(t *testing.T, r Check, name, symbol, detail, fix string) {
	t.Helper()
	if r.Name != name || r.Symbol() != symbol {
		t.Errorf("result %+v: want %s %s", r, symbol, name)
	}
	if !strings.Contains(r.Detail, detail) {
		t.Errorf("detail = %q, want it to contain %q", r.Detail, detail)
	}
	if !strings.Contains(r.Fix, fix) {
		t.Errorf("fix = %q, want it to contain %q", r.Fix, fix)
	}
}

// writeFakeImage writes a complete image, as image.Build would leave it,
// with tiny files, and returns its hash.
func writeFakeImage(t *testing.T, dir string) string {
	t.Helper()
	m := image.Manifest{
		Arch:       "amd64",
		Suite:      image.Suite,
		Kernel:     image.KernelRef{Package: "linux-image-6.1.0-28-amd64", Version: "6.1.119-1", Release: "6.1.0-28-amd64", SHA256: "aa"},
		Modules:    []string{"virtio_blk"},
		Packages:   []image.PackageRef{{Name: "bash", Version: "5.2.15-2+b7", SHA256: "bb"}, {Name: "git", Version: "1:2.39.5-0+deb12u1", SHA256: "cc"}},
		Agent:      image.DefaultAgent("amd64"),
		InitSHA256: "dd",
		Builder:    image.Builder,
		BuiltAt:    time.Date(2025, 3, 4, 5, 6, 0, 0, time.Local),
		Sizes:      map[string]int64{},
	}
	m.Hash = m.ComputeHash()
	d := filepath.Join(dir, m.Hash)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{image.KernelFile, image.InitramfsFile, image.RootFSFile, image.AgentFile} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		m.Sizes[name] = int64(len(name))
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, image.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return m.Hash
}

func TestDoctorImage(t *testing.T) {
	const build = "run `sandbar image build` (about a minute, downloads ~150 MB)"
	t.Run("built", func(t *testing.T) {
		dir := t.TempDir()
		hash := writeFakeImage(t, dir)
		r := checkImage(dir)
		want := hash[:12] + " (amd64): kernel 6.1.119-1, 2 packages, agent " + image.DefaultAgent("amd64").Version + ", built 2025-03-04 05:06"
		assertResult(t, r, "guest image", "✓", want, "")
		if r.Detail != want {
			t.Errorf("detail = %q, want %q", r.Detail, want)
		}
	})
	t.Run("not built", func(t *testing.T) {
		for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
			assertResult(t, checkImage(dir), "guest image", "✗", "no guest image in "+dir, build)
		}
	})
	t.Run("corrupt manifest", func(t *testing.T) {
		dir := t.TempDir()
		hash := writeFakeImage(t, dir)
		if err := os.WriteFile(filepath.Join(dir, hash, image.ManifestFile), []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		assertResult(t, checkImage(dir), "guest image", "✗", "no usable guest image: open image "+hash+": bad manifest", build)
	})
	t.Run("missing file", func(t *testing.T) {
		dir := t.TempDir()
		hash := writeFakeImage(t, dir)
		if err := os.Remove(filepath.Join(dir, hash, image.RootFSFile)); err != nil {
			t.Fatal(err)
		}
		assertResult(t, checkImage(dir), "guest image", "✗", image.RootFSFile, build)
	})
	t.Run("not a folder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "images")
		if err := os.WriteFile(dir, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		assertResult(t, checkImage(dir), "guest image", "✗", "list images in "+dir, "make "+dir+" a readable folder")
	})
}

func TestDoctorKeyringUnreachable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Secret Service is Linux's keyring")
	}
	const fix = "start a Secret Service provider such as gnome-keyring and unlock it"
	t.Run("bus not there", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "no-bus")
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+sock)
		start := time.Now()
		r := checkKeyring(context.Background(), "linux", keyringProbeTimeout)
		assertResult(t, r, "keyring", "✗", "the Secret Service cannot be used: ", fix)
		if !strings.Contains(r.Detail, sock) {
			t.Errorf("detail = %q, want the underlying error naming %s", r.Detail, sock)
		}
		if took := time.Since(start); took >= keyringProbeTimeout {
			t.Errorf("the check took %s: it should fail at once, not time out", took)
		}
	})
	t.Run("no bus address", func(t *testing.T) {
		if _, err := os.Stat("/run/user/" + strconv.Itoa(os.Getuid()) + "/bus"); err == nil {
			t.Skip("this user has a session bus at its standard place")
		}
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
		assertResult(t, checkKeyring(context.Background(), "linux", keyringProbeTimeout), "keyring", "✗", "no D-Bus session bus", fix)
	})
}

// keyringHelperEnv marks the test binary run by TestKeyringReachable
// inside a private D-Bus session with its own unlocked gnome-keyring.
const keyringHelperEnv = "SANDBAR_DOCTOR_KEYRING_HELPER"

// TestKeyringReachable checks the keyring against a real Secret Service:
// it runs TestKeyringReachableHelper in a private D-Bus session, with a
// gnome-keyring whose login keyring lives in a temporary HOME, so the
// person's own keyrings are never touched and no prompt can appear.
func TestKeyringReachable(t *testing.T) {
	for _, tool := range []string{"dbus-run-session", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian/Ubuntu: apt install dbus gnome-keyring)", tool)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	home, run := filepath.Join(tmp, "home"), filepath.Join(tmp, "run")
	for _, d := range []string{home, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "GNOME_KEYRING_CONTROL", "HOME",
			"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", keyringHelperEnv:
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home,
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_RUNTIME_DIR="+run,
		keyringHelperEnv+"=1")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// --unlock reads the new login keyring's password from stdin; the
	// daemon leaves when the bus does, at the end of dbus-run-session.
	script := `printf sandbar-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null || exit 1
exec "$0" -test.run='^TestKeyringReachableHelper$' -test.v -test.count=1`
	cmd := exec.CommandContext(ctx, "dbus-run-session", "--", "sh", "-c", script, exe)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() { waitKeyringDaemonsGone(t, home) })
	if err != nil {
		t.Fatalf("helper in a private keyring session: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestKeyringReachableHelper") {
		t.Fatalf("the helper did not pass:\n%s", out)
	}
}

// TestKeyringReachableHelper is run by TestKeyringReachable, in the private
// session it made; run any other way it skips.
func TestKeyringReachableHelper(t *testing.T) {
	if os.Getenv(keyringHelperEnv) != "1" {
		t.Skip("run by TestKeyringReachable inside a private keyring session")
	}
	waitSecretService(t, 5*time.Second)
	if len(keyringDaemons(os.Getenv("HOME"))) == 0 {
		t.Error("the session's gnome-keyring-daemon is not visible in /proc: the check that it is gone afterwards would prove nothing")
	}
	r := checkKeyring(context.Background(), "linux", keyringProbeTimeout)
	assertResult(t, r, "keyring", "✓", "keyring reachable (Secret Service)", "")
	if r.Fix != "" {
		t.Errorf("fix = %q on success", r.Fix)
	}
}

// waitSecretService waits for org.freedesktop.secrets to be owned on the
// session bus. It watches the bus rather than calling the keyring: a call
// before the daemon is up would have the bus start a second one, from its
// activation file.
func waitSecretService(t *testing.T, timeout time.Duration) {
	t.Helper()
	const name = "org.freedesktop.secrets"
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := dbus.ConnectSessionBus(dbus.WithContext(ctx))
	if err != nil {
		t.Fatalf("connect to the private session bus: %v", err)
	}
	defer conn.Close()
	if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, name)); err != nil {
		t.Fatalf("watch the bus: %v", err)
	}
	sigs := make(chan *dbus.Signal, 4)
	conn.Signal(sigs)
	var owned bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned); err != nil {
		t.Fatalf("ask the bus for %s: %v", name, err)
	}
	for !owned {
		select {
		case s := <-sigs:
			if s != nil && s.Name == "org.freedesktop.DBus.NameOwnerChanged" && len(s.Body) == 3 {
				owner, _ := s.Body[2].(string)
				owned = owner != ""
			}
		case <-ctx.Done():
			t.Fatalf("gnome-keyring did not take %s on the bus within %s", name, timeout)
		}
	}
}

// waitKeyringDaemonsGone fails the test if a gnome-keyring-daemon of the
// private session (one whose HOME is home) outlives it by more than a few
// seconds, and then ends it. Matching on HOME leaves alone every other
// gnome-keyring on the machine.
func waitKeyringDaemonsGone(t *testing.T, home string) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		pids := keyringDaemons(home)
		if len(pids) == 0 {
			return
		}
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		}
		for _, pid := range pids {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		t.Errorf("gnome-keyring-daemon %v was still running after its bus session ended; killed it", pids)
		return
	}
}

// keyringDaemons lists the live gnome-keyring-daemon processes whose
// environment has HOME=home. A zombie has no environment left to read.
func keyringDaemons(home string) []int {
	environs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var pids []int
	for _, f := range environs {
		dir := filepath.Dir(f)
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || !strings.HasPrefix("gnome-keyring-daemon", strings.TrimSpace(string(comm))) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(append([]byte{0}, b...), []byte("\x00HOME="+home+"\x00")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(dir)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestDoctorStorage(t *testing.T) {
	t.Run("real", func(t *testing.T) {
		home := t.TempDir()
		free, at, err := freeSpace(home)
		if err != nil || at != home {
			t.Fatalf("freeSpace(%s) = %d, %s, %v", home, free, at, err)
		}
		r := checkStorage(config.Paths{Home: home, Images: filepath.Join(home, "images")})
		want := storageVerdict("", free)
		if r.Name != "storage" || r.OK != want.OK || r.Warn != want.Warn {
			t.Errorf("result %+v for %d bytes free, want %s", r, free, want.Symbol())
		}
		if !strings.HasPrefix(r.Detail, "data in "+home+": ") || !strings.HasSuffix(r.Detail, " free") {
			t.Errorf("detail = %q", r.Detail)
		}
		if strings.Contains(r.Detail, "images in") {
			t.Errorf("detail = %q names the images folder, which is inside the data folder", r.Detail)
		}
	})
	t.Run("not created yet", func(t *testing.T) {
		parent := t.TempDir()
		home := filepath.Join(parent, "a", "b", "sandbar")
		_, at, err := freeSpace(home)
		if err != nil || at != parent {
			t.Fatalf("freeSpace(%s): at %s, %v; want its nearest existing parent %s", home, at, err, parent)
		}
		r := checkStorage(config.Paths{Home: home, Images: filepath.Join(home, "images")})
		assertResult(t, r, "storage", r.Symbol(), "data in "+home+" (not created yet): ", "")
		if _, err := os.Stat(home); err == nil {
			t.Errorf("the check created %s", home)
		}
	})
	t.Run("images elsewhere", func(t *testing.T) {
		home, images := t.TempDir(), t.TempDir()
		r := checkStorage(config.Paths{Home: home, Images: images})
		assertResult(t, r, "storage", r.Symbol(), "; images in "+images+": ", "")
	})
	t.Run("verdicts", func(t *testing.T) {
		const fix = "free some space or set SANDBAR_HOME to a larger disk"
		for _, tt := range []struct {
			free   uint64
			symbol string
			fix    string
		}{
			{0, "✗", fix},
			{2<<30 - 1, "✗", fix},
			{2 << 30, "!", fix},
			{10<<30 - 1, "!", fix},
			{10 << 30, "✓", ""},
			{1 << 40, "✓", ""},
		} {
			r := storageVerdict("d", tt.free)
			if r.Symbol() != tt.symbol || !strings.Contains(r.Fix, tt.fix) || (tt.fix == "") != (r.Fix == "") {
				t.Errorf("storageVerdict(%d) = %+v, want %s with fix %q", tt.free, r, tt.symbol, tt.fix)
			}
		}
	})
}

func TestDoctorGit(t *testing.T) {
	t.Run("installed", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		r := checkGit(context.Background())
		assertResult(t, r, "git", "✓", "git version ", "")
	})
	t.Run("missing", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		r := checkGit(context.Background())
		assertResult(t, r, "git", "✗", "git is not installed", "run `sudo apt install git` (Linux) / `xcode-select --install` (macOS)")
	})
	t.Run("too old", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "git"), []byte("#!/bin/sh\necho 'git version 2.20.1'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", dir)
		r := checkGit(context.Background())
		assertResult(t, r, "git", "✗", "git version 2.20.1 is too old: Sandbar needs git 2.25 or newer", "update git")
	})
}

func TestGitVersion(t *testing.T) {
	for _, tt := range []struct {
		in           string
		major, minor int
		ok           bool
	}{
		{"git version 2.39.5", 2, 39, true},
		{"git version 2.39.5 (Apple Git-154)", 2, 39, true},
		{"git version 2.45.1.windows.1", 2, 45, true},
		{"git version 3.0", 3, 0, true},
		{"git version 2", 0, 0, false},
		{"git version ", 0, 0, false},
		{"hub version 2.14.2", 0, 0, false},
		{"", 0, 0, false},
	} {
		major, minor, ok := gitVersion(tt.in)
		if major != tt.major || minor != tt.minor || ok != tt.ok {
			t.Errorf("gitVersion(%q) = %d, %d, %v; want %d, %d, %v", tt.in, major, minor, ok, tt.major, tt.minor, tt.ok)
		}
	}
}
