package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
	"sandbar/app/imagebuild"
	"sandbar/vm"
	"sandbar/vm/vmtest"
)

// checkedPrefs is the real Prefs with doctor's checks and the image
// handed in by the test.
type checkedPrefs struct {
	*Prefs
	mu     sync.Mutex
	checks []doctor.Check
	runs   int
	built  bool
}

func (p *checkedPrefs) DoctorChecks(context.Context) []doctor.Check {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs++
	return p.checks
}

func (p *checkedPrefs) ImageStatus() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.built {
		return "", imagebuild.ErrNotBuilt
	}
	return "abc123 (amd64): kernel 6.1, 200 packages", nil
}

func (p *checkedPrefs) RebuildImage(_ context.Context, progress func(string, float64)) error {
	progress("Writing the root disk…", 0.7)
	p.mu.Lock()
	p.built = true
	p.checks[1] = doctor.Check{Name: "guest image", OK: true, Detail: "abc123"}
	p.mu.Unlock()
	return nil
}

func TestFirstRunChecklist(t *testing.T) {
	h := newAppHarness(t)
	cp := &checkedPrefs{Prefs: h.prefs, checks: []doctor.Check{
		{Name: "hypervisor", OK: true, Warn: true, Detail: "QEMU without KVM", Fix: "enable virtualization"},
		{Name: "guest image", Detail: "no guest image in /x", Fix: "run `sandbar image build`"},
		{Name: "git", OK: true, Detail: "git version 2.39.5", Fix: "never shown"},
	}}
	h.u.Settings = cp
	h.u.ShowStartup()
	h.q.WaitFor(t, 5*time.Second, "the first-run window shown with no projects", func() bool { return h.u.firstRunWin != nil })
	w := h.u.firstRunWin
	w.win.Resize(fyne.NewSize(640, 900))
	h.q.WaitFor(t, 5*time.Second, "the checklist", func() bool { return len(w.checks) == 3 && w.imageBox.Visible() })

	failed, warned, passed := checkIcon(doctor.Check{}), checkIcon(doctor.Check{OK: true, Warn: true}), checkIcon(doctor.Check{OK: true})
	for _, mark := range []fyne.Resource{failed, warned, passed} {
		if !showsIcon(w.win, mark) {
			t.Errorf("the first-run window does not show the mark %s", mark.Name())
		}
	}
	for _, want := range []string{"hypervisor", "QEMU without KVM", "Fix: enable virtualization", "guest image",
		"Fix: run `sandbar image build`", "git version 2.39.5", "Drop a repository folder here"} {
		if !shows(w.win, want) {
			t.Errorf("the first-run window does not show %q", want)
		}
	}
	if shows(w.win, "never shown") {
		t.Error("a passing check's fix is shown")
	}

	test.Tap(w.build)
	h.q.WaitFor(t, 5*time.Second, "the image built and the checks run again", func() bool {
		cp.mu.Lock()
		runs := cp.runs
		cp.mu.Unlock()
		return runs == 2 && !w.imageBox.Visible() && !showsIcon(w.win, failed)
	})

	repo := h.env.Repo(t, "first")
	w.dropped(fyne.NewPos(10, 10), []fyne.URI{storage.NewFileURI(repo)})
	h.q.WaitFor(t, 5*time.Second, "the project added", func() bool { return strings.HasPrefix(w.banner.text.Text, "Added first") })
	if sees(w.win, "Drop a repository folder here") || !sees(w.win, "first is ready.") {
		t.Errorf("after the drop Welcome shows %q; want the project ready, no drop zone", seenTexts(w.win.Canvas().Content()))
	}
	test.Tap(w.open)
	if h.u.firstRunWin != nil || h.u.mainWin == nil {
		t.Fatal("Open Sandbar did not swap the first-run window for the Sandbar window")
	}

	// With a project, startup shows nothing.
	if h.u.firstRunNeeded(context.Background()) {
		t.Error("startup would show the first-run window though there is a project")
	}
}

func TestPrefsDoctorChecks(t *testing.T) {
	h := newAppHarness(t)
	r := vm.NewRegistry()
	r.Register(&vmtest.Hypervisor{}, true)
	h.prefs.Doctor = &doctor.Doctor{Paths: h.env.Paths, Hypervisors: r}
	checks := h.prefs.DoctorChecks(context.Background())
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
	}
	if fmt.Sprint(names) != "[hypervisor guest image keyring storage git]" {
		t.Fatalf("checks %v", names)
	}
	if c := checks[1]; c.OK || !strings.Contains(c.Fix, "sandbar image build") {
		t.Errorf("with no image: %+v", c)
	}
	if c := checks[4]; !c.OK || !strings.HasPrefix(c.Detail, "git version") {
		t.Errorf("git: %+v", c)
	}
}

// showsIcon reports whether w shows an icon of res.
func showsIcon(w fyne.Window, res fyne.Resource) bool {
	found := false
	for _, o := range test.LaidOutObjects(w.Canvas().Content()) {
		if i, ok := o.(*widget.Icon); ok && i.Visible() && i.Resource != nil && i.Resource.Name() == res.Name() {
			found = true
		}
	}
	return found
}
