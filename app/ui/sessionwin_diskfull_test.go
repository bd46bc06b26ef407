package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/store"
)

// TestSessionWindowPausedOnFullDisk: a session whose VM the hypervisor
// paused on a full disk (the thin fake's event) reads "Paused — the disk
// holding Sandbar's data is full (N MB free)" in its window, which offers
// Resume; pressing it runs the session on as it was, and the button goes.
func TestSessionWindowPausedOnFullDisk(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, echoAgent)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the header saying the agent works", func() bool {
		return strings.HasPrefix(w.state.Text, "Working")
	})
	if w.resume.Visible() {
		t.Error("Resume shows while the session works")
	}
	// No disk has this free: only the button resumes it.
	if err := h.env.Store.SetSetting(context.Background(), store.SettingDiskFloorMiB, "100000000"); err != nil {
		t.Fatal(err)
	}
	h.env.Hypervisor.Booted()[0].PauseOnFullDisk()
	h.q.WaitFor(t, 30*time.Second, "the header to say paused on a full disk, and Resume offered", func() bool {
		return strings.HasPrefix(w.state.Text, "Paused — the disk holding Sandbar's data is full (") && w.resume.Visible() && !w.resume.Disabled()
	})
	test.Tap(w.resume)
	h.q.WaitFor(t, 30*time.Second, "the header to say it works again, without Resume", func() bool {
		return strings.HasPrefix(w.state.Text, "Working") && !w.resume.Visible()
	})
	if h.env.Hypervisor.Booted()[0].Paused() {
		t.Error("Resume was pressed and the machine is still paused")
	}
}

// TestSessionWindowRestartWithoutDisk: Restart of a session whose disk is
// gone offers the choice in its window (continue from saved work, or
// delete), and "Continue from saved work" runs it in a new clone.
func TestSessionWindowRestartWithoutDisk(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, `[ -e work.txt ] || { echo work > work.txt && git add work.txt && git commit -qm "agent work"; }; echo up; exec sleep 600`)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the header saying the agent works", func() bool { return strings.HasPrefix(w.state.Text, "Working") })
	if _, err := h.env.Manager.Stop(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	dir := h.env.Paths.SessionDir(s.ID)
	// The in-process guest's workspace copy stands for the scratch
	// disk's layer: both go.
	for _, p := range []string{dir.Scratch(), filepath.Join(dir.VMDir(), "vmtest-workspace")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	h.q.WaitFor(t, 30*time.Second, "Restart offered", func() bool { return !w.restart.Disabled() })
	test.Tap(w.restart)
	h.q.WaitFor(t, 30*time.Second, "the choice between saved work and delete", func() bool {
		return strings.Contains(w.notice.text(), "disk is gone") && w.notice.button("Continue from saved work") != nil && w.notice.button("Delete") != nil
	})
	test.Tap(w.notice.button("Continue from saved work"))
	h.q.WaitFor(t, 30*time.Second, "the session running from its saved work", func() bool { return strings.HasPrefix(w.state.Text, "Working") })
	h.q.WaitFor(t, 30*time.Second, "the log saying where it continues from", func() bool { return logHas(w.logs, "continuing from its last saved work") })
}
