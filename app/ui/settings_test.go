package ui

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/imagebuild"
	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

// settings opens Settings and waits for its first load.
func (h *appHarness) settings(t *testing.T) *settingsWindow {
	t.Helper()
	h.u.ShowSettings()
	w := h.u.settingsWin
	h.q.WaitFor(t, 5*time.Second, "Settings' first load", func() bool { return w.cpus.Text != "" })
	return w
}

// selectTab shows the tab named name.
func selectTab(t *testing.T, tabs *container.AppTabs, name string) {
	t.Helper()
	for _, it := range tabs.Items {
		if it.Text == name {
			tabs.Select(it)
			return
		}
	}
	t.Fatalf("no tab %q", name)
}

func TestSettingsDefaultLimitsReachTheBackend(t *testing.T) {
	h := newAppHarness(t)
	w := h.settings(t)
	if w.cpus.Text != "2" || w.memory.Selected != "2 GiB" || w.disk.Text != "8" || w.budget.Text != "60" || w.agentCmd.Text != "" {
		t.Fatalf("defaults shown: %q %q %q %q %q", w.cpus.Text, w.memory.Selected, w.disk.Text, w.budget.Text, w.agentCmd.Text)
	}
	// New Session's steps, up to the machine's 16 GiB.
	if want := []string{"1 GiB", "2 GiB", "4 GiB", "8 GiB", "16 GiB"}; !slices.Equal(w.memory.Options, want) {
		t.Errorf("memory offers %q, want %q", w.memory.Options, want)
	}
	retype(w.cpus, "9")
	if !w.defaultsSave.Disabled() || !strings.Contains(w.defaultsStatus.Text, "vCPUs: type a whole number from 1 to 4") {
		t.Errorf("9 vCPUs of 4: Save disabled %v, status %q", w.defaultsSave.Disabled(), w.defaultsStatus.Text)
	}
	retype(w.cpus, "1")
	w.memory.SetSelected("1 GiB")
	retype(w.disk, "3")
	retype(w.budget, "50")
	test.Type(w.agentCmd, "echo from the default agent")
	if !w.autoCommit.Checked {
		t.Error("committing the work a session leaves is off by default")
	}
	test.Tap(w.autoCommit)
	test.Tap(w.defaultsSave)
	h.q.WaitFor(t, 5*time.Second, "the defaults saved", func() bool { return strings.HasPrefix(w.defaultsStatus.Text, "Saved") })

	ctx := context.Background()
	p := h.addProject(t, "defaults")
	s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name})
	if err != nil {
		t.Fatal(err)
	}
	if l := s.Limits; l.CPUs != 1 || l.MemoryMiB != 1024 || l.DiskGiB != 3 || s.Agent.Kind != "custom" {
		t.Errorf("a session started with no limits got %+v, agent %+v; want the saved defaults", l, s.Agent)
	}
	b, err := h.env.Manager.Budget(ctx)
	if err != nil || b.Share != 0.5 {
		t.Errorf("budget share %v, %v; want 0.5", b.Share, err)
	}
	h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
	if v, _, _ := h.env.Store.Setting(ctx, store.SettingAutoCommit); v != "off" {
		t.Errorf("auto-commit setting after unticking it = %q, want off", v)
	}

	// New Session starts from the saved defaults.
	ns := h.newSession(t, p.ID)
	if ns.cpus.Value != 1 || ns.memory.Selected != "1 GiB" || ns.disk.Text != "3" || ns.agent.Selected != agentCustom || ns.command.Text != "echo from the default agent" {
		t.Errorf("New Session shows %v vCPUs, %q, %q GiB, %q %q", ns.cpus.Value, ns.memory.Selected, ns.disk.Text, ns.agent.Selected, ns.command.Text)
	}
}

// A default memory that is no step (768 MiB, saved before Settings
// offered steps, or with the CLI) is shown and kept when the other
// defaults are saved, and New Session starts from it; choosing a step
// replaces it.
func TestSettingsDefaultMemoryOffTheSteps(t *testing.T) {
	h := newAppHarness(t)
	ctx := context.Background()
	if err := h.prefs.SetSetting(ctx, KeyDefaultMemoryMiB, "768"); err != nil {
		t.Fatal(err)
	}
	w := h.settings(t)
	if want := []string{"768 MiB", "1 GiB", "2 GiB", "4 GiB", "8 GiB", "16 GiB"}; w.memory.Selected != "768 MiB" || !slices.Equal(w.memory.Options, want) {
		t.Fatalf("memory shows %q of %q, want 768 MiB of %q", w.memory.Selected, w.memory.Options, want)
	}
	saved := func(want string) {
		t.Helper()
		setStatus(w.defaultsStatus, widget.MediumImportance, "") // the last save's word
		test.Tap(w.defaultsSave)
		h.q.WaitFor(t, 5*time.Second, "the defaults saved", func() bool { return strings.HasPrefix(w.defaultsStatus.Text, "Saved") })
		if v, _, _ := h.prefs.Setting(ctx, KeyDefaultMemoryMiB); v != want {
			t.Errorf("default memory stored as %q, want %q", v, want)
		}
	}
	retype(w.cpus, "3")
	saved("768")
	if v, _, _ := h.prefs.Setting(ctx, KeyDefaultCPUs); v != "3" {
		t.Errorf("vCPUs stored as %q, want 3", v)
	}
	ns := h.newSession(t, h.addProject(t, "odd").ID)
	if ns.memory.Selected != "768 MiB" {
		t.Errorf("New Session starts from %q, want the default 768 MiB", ns.memory.Selected)
	}
	w.memory.SetSelected("4 GiB")
	saved("4096")
}

func TestSettingsDefaultMemorySteps(t *testing.T) {
	for _, tc := range []struct {
		host, stored int
		want         []int
	}{
		{16384, 2048, []int{1024, 2048, 4096, 8192, 16384}},
		{16384, 768, []int{768, 1024, 2048, 4096, 8192, 16384}},
		{16384, 131072, []int{1024, 2048, 4096, 8192, 16384, 131072}}, // more than this machine has: kept
		{16384, 100, []int{1024, 2048, 4096, 8192, 16384}},            // below the guest's floor: not offered
	} {
		if got := defaultMemorySteps(tc.host, tc.stored); !slices.Equal(got, tc.want) {
			t.Errorf("defaultMemorySteps(%d, %d) = %v, want %v", tc.host, tc.stored, got, tc.want)
		}
	}
}

// TestSettingsSecrets runs against fakeSecrets, a map: the real keyring
// is tested in app/secrets and tests/keyringtest.
func TestSettingsSecrets(t *testing.T) {
	h := newAppHarness(t)
	h.setSecret(t, "GITHUB_TOKEN", "ghp_old")
	w := h.settings(t)
	h.q.WaitFor(t, 5*time.Second, "the secret names listed", func() bool { return len(w.secretNames) == 1 })

	test.Type(w.secretName, "2BAD")
	test.Type(w.secretValue, "x")
	if !w.secretSave.Disabled() || !strings.Contains(w.secretStatus.Text, "letters, digits and _") {
		t.Errorf("a bad name: Save disabled %v, status %q", w.secretSave.Disabled(), w.secretStatus.Text)
	}
	const value = "sk-ant-settings-test-value-0123456789"
	retype(w.secretName, "ANTHROPIC_API_KEY")
	retype(w.secretValue, value)
	test.Tap(w.secretSave)
	h.q.WaitFor(t, 5*time.Second, "the new secret listed", func() bool {
		return len(w.secretNames) == 2 && shows(w.win, "ANTHROPIC_API_KEY") && strings.HasPrefix(w.secretStatus.Text, "Saved")
	})
	if v, _ := h.secrets.get("ANTHROPIC_API_KEY"); v != value {
		t.Errorf("keyring holds %q", v)
	}
	if w.secretValue.Text != "" || shows(w.win, value) || shows(w.win, "ghp_old") {
		t.Error("a secret value is still on screen after saving")
	}

	// Replace: the name is filled in, the old value never shown.
	w.replaceSecret("GITHUB_TOKEN")
	if w.secretName.Text != "GITHUB_TOKEN" || w.secretValue.Text != "" {
		t.Errorf("replace filled %q / %q", w.secretName.Text, w.secretValue.Text)
	}
	test.Type(w.secretValue, "ghp_new")
	test.Tap(w.secretSave)
	h.q.WaitFor(t, 5*time.Second, "the secret replaced", func() bool { return strings.HasPrefix(w.secretStatus.Text, "Replaced GITHUB_TOKEN") })
	if v, _ := h.secrets.get("GITHUB_TOKEN"); v != "ghp_new" {
		t.Errorf("GITHUB_TOKEN = %q", v)
	}

	// Delete asks first; cancel keeps it, Delete removes it.
	w.confirmDeleteSecret("GITHUB_TOKEN")
	test.Tap(overlayButton(t, w.win, "Cancel"))
	w.confirmDeleteSecret("GITHUB_TOKEN")
	test.Tap(overlayButton(t, w.win, "Delete"))
	h.q.WaitFor(t, 5*time.Second, "the secret deleted", func() bool {
		return len(w.secretNames) == 1 && w.secretNames[0] == "ANTHROPIC_API_KEY" && w.secretStatus.Text == "Deleted GITHUB_TOKEN."
	})
	if _, ok := h.secrets.get("GITHUB_TOKEN"); ok {
		t.Error("GITHUB_TOKEN is still in the keyring")
	}
}

func TestSettingsStorageCleanup(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "storage")
	ctx := context.Background()
	start := func(script string) string {
		s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell(script)})
		if err != nil {
			t.Fatal(err)
		}
		h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
		return s.ID
	}
	// Files in .git are no work of the session's: this one may go.
	clean := start("head -c 300000 /dev/urandom > .git/big.bin")
	dirty := start("echo work > work.txt && git add work.txt && git commit -qm 'agent work'")
	w := h.settings(t)
	h.q.WaitFor(t, 5*time.Second, "two sessions in the storage list", func() bool { return len(w.storage) == 2 && !w.cleanup.Disabled() })
	if w.storage[0].id != clean || w.storage[0].bytes < 300000 {
		t.Errorf("biggest first: %+v", w.storage)
	}
	w.confirmCleanup()
	test.Tap(overlayButton(t, w.win, "Delete"))
	h.q.WaitFor(t, 20*time.Second, "the clean-up reported", func() bool { return strings.HasPrefix(w.storageStatus.Text, "Deleted 1 of 2") })
	if !strings.Contains(w.storageStatus.Text, "Kept "+dirty[:8]+": unmerged work") {
		t.Errorf("status = %q, want the dirty session kept", w.storageStatus.Text)
	}
	if _, err := h.env.Manager.Get(ctx, clean); err == nil {
		t.Error("the clean session is still there")
	}
	if _, err := h.env.Manager.Get(ctx, dirty); err != nil {
		t.Errorf("the session with unmerged work was deleted: %v", err)
	}
	h.q.WaitFor(t, 5*time.Second, "the storage list reread", func() bool { return len(w.storage) == 1 })
}

func TestSettingsLaunchAtLogin(t *testing.T) {
	h := newAppHarness(t)
	w := h.settings(t)
	h.q.WaitFor(t, 5*time.Second, "launch at login read", func() bool { return w.loginLoaded })
	on, settable, err := h.prefs.LaunchAtLogin()
	if on || !settable || err != nil || w.login.Checked || w.login.Disabled() {
		t.Fatalf("initially: on %v settable %v err %v; check %v disabled %v", on, settable, err, w.login.Checked, w.login.Disabled())
	}
	test.Tap(w.login)
	entry := filepath.Join(h.prefs.AutostartDir, "sandbar.desktop")
	h.q.WaitFor(t, 5*time.Second, "the autostart entry written", func() bool { _, err := os.Stat(entry); return err == nil })
	b, _ := os.ReadFile(entry)
	if !strings.Contains(string(b), "Exec=\"/opt/Sandbar Apps/sandbar\"\n") || !strings.Contains(string(b), "Type=Application") {
		t.Errorf("autostart entry:\n%s", b)
	}
	test.Tap(w.login)
	h.q.WaitFor(t, 5*time.Second, "the autostart entry removed", func() bool { _, err := os.Stat(entry); return os.IsNotExist(err) })
	if got := desktopExec(`/a "b" $c\d`); got != `"/a \\"b\\" \\$c\\\\d"` {
		t.Errorf("desktopExec = %s", got)
	}
}

func TestSettingsImageRebuild(t *testing.T) {
	h := newAppHarness(t)
	release := make(chan struct{})
	h.prefs.Images = &heldBuild{Builder: h.prefs.Images.(*imagebuild.Builder), build: func(ctx context.Context, f func(imagebuild.Progress)) error {
		f(imagebuild.Progress{Stage: "index"})
		f(imagebuild.Progress{Stage: "download", Count: 5, Of: 10})
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		f(imagebuild.Progress{Stage: "done"})
		return nil
	}}
	w := h.settings(t)
	selectTab(t, w.tabs, "Guest Image")
	b := h.u.image
	h.q.WaitFor(t, 5*time.Second, "the image status", func() bool { s, _ := b.status.Get(); return strings.HasPrefix(s, "No guest image") })
	test.Tap(w.rebuild)
	h.q.WaitFor(t, 5*time.Second, "download progress shown", func() bool {
		s, _ := b.stage.Get()
		f, _ := b.progress.Get()
		return s == "Downloading packages (5 of 10)…" && f > 0.3 && f < 0.4 && w.rebuild.Disabled() && w.cancelBuild.Visible()
	})
	if !shows(w.win, "Downloading packages (5 of 10)…") {
		t.Error("the stage is not on screen")
	}
	test.Tap(w.cancelBuild)
	h.q.WaitFor(t, 5*time.Second, "the build cancelled", func() bool { s, _ := b.stage.Get(); return s == "Build cancelled." && !w.rebuild.Disabled() })
	test.Tap(w.rebuild)
	close(release)
	h.q.WaitFor(t, 5*time.Second, "the build finished", func() bool { s, _ := b.stage.Get(); f, _ := b.progress.Get(); return s == "Image ready." && f == 1 })
}

// heldBuild is the real image builder, except that a rebuild runs build,
// whose progress reaches the window as the builder's would.
type heldBuild struct {
	*imagebuild.Builder
	build func(ctx context.Context, f func(imagebuild.Progress)) error
}

func (b *heldBuild) Rebuild(ctx context.Context, progress func(stage string, frac float64)) error {
	return b.build(ctx, func(pr imagebuild.Progress) { progress(imagebuild.Stage(pr)) })
}

// TestSettingsStorageLoadsWhenShown: sessions started while Settings was
// open are in the Storage tab as soon as it is selected, without Refresh.
func TestSettingsStorageLoadsWhenShown(t *testing.T) {
	h := newAppHarness(t)
	w := h.settings(t)
	h.q.WaitFor(t, 5*time.Second, "the empty storage list read", func() bool { return w.storageTotal.Text == "0 B in 0 sessions" })
	p := h.addProject(t, "storage")
	s, err := h.env.Manager.Start(context.Background(), session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("echo hi > hi.txt")})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
	for _, ti := range w.tabs.Items {
		if ti.Text == "Storage" {
			w.tabs.Select(ti)
		}
	}
	h.q.WaitFor(t, 5*time.Second, "the new session in the Storage tab", func() bool {
		return len(w.storage) == 1 && w.storage[0].id == s.ID && strings.HasSuffix(w.storageTotal.Text, " in 1 session")
	})
	// Hidden and shown again on that tab: read again.
	w.win.Hide()
	s2, err := h.env.Manager.Start(context.Background(), session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("true")})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s2.ID, session.StateStopped, 20*time.Second)
	h.u.ShowSettings()
	h.q.WaitFor(t, 5*time.Second, "both sessions in the Storage tab after Settings was shown again", func() bool { return len(w.storage) == 2 })
}
