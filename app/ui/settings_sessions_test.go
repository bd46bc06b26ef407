package ui

import (
	"context"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/store"
)

// Settings, General: what quitting does with sessions and when a waiting
// one is suspended show the defaults (stop; 15 minutes), and a choice
// reaches the store, where the engine reads it (session.KeepPolicy,
// autoSuspendAfter).
func TestSettingsSessions(t *testing.T) {
	h := newAppHarness(t)
	w := h.settings(t)
	s := w.sessions
	h.q.WaitFor(t, 5*time.Second, "the sessions settings read", func() bool { return s.keep.Selected != "" })
	if s.keep.Selected != keepChoices[0].label || s.autoSuspend.Selected != "After 15 minutes" {
		t.Fatalf("initially: %q, %q; want stopping at quit and 15 minutes", s.keep.Selected, s.autoSuspend.Selected)
	}
	ctx := context.Background()
	s.keep.SetSelected(keepChoices[1].label)
	h.q.WaitFor(t, 5*time.Second, "keep sessions saved", func() bool {
		v, _, _ := h.env.Store.Setting(ctx, store.SettingKeepSessions)
		return session.ParseKeepPolicy(v) == session.KeepResume
	})
	s.autoSuspend.SetSelected("Never")
	h.q.WaitFor(t, 5*time.Second, "auto-suspend off saved", func() bool {
		v, _, _ := h.env.Store.Setting(ctx, store.SettingAutoSuspend)
		d, err := session.ParseAutoSuspend(v)
		return err == nil && d == 0
	})
	if autoSuspendLabel("90s") != "After 1m30s" || autoSuspendLabel("60") != "After an hour" {
		t.Errorf("labels of values set elsewhere: %q, %q", autoSuspendLabel("90s"), autoSuspendLabel("60"))
	}
}
