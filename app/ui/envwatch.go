package ui

import (
	"context"
	"time"

	"sandbar/app/session"
)

// No event says a preparation moved on: a window showing a project's
// environment reads it again now and then, often while it is being
// prepared (the API's advice: every second), seldom otherwise, for a
// session may start a preparation any time.
const (
	envPollPreparing = time.Second
	envPollIdle      = 5 * time.Second
)

// envWatch reads one project's environment until stopped, handing each
// reading to show on the UI goroutine.
type envWatch struct {
	kick chan struct{}
	stop context.CancelFunc
}

// watchEnv starts reading the environment of the project ref names.
// Stop it when its window closes; the UI's Close stops it too.
func (u *UI) watchEnv(ref string, show func(session.EnvironmentView, error)) *envWatch {
	w := &envWatch{kick: make(chan struct{}, 1)}
	w.stop = u.goUntil(func(ctx context.Context) {
		for {
			v, err := u.Backend.Environment(ctx, ref)
			if ctx.Err() != nil {
				return
			}
			u.post(func() {
				if ctx.Err() == nil {
					show(v, err)
				}
			})
			wait := envPollIdle
			if err == nil && v.Prepared != nil && v.Prepared.State == session.PrepPreparing {
				wait = envPollPreparing
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-w.kick:
				t.Stop()
			case <-t.C:
			}
		}
	})
	return w
}

// Kick reads the environment again now (after Rebuild, or trust given).
func (w *envWatch) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Stop ends the reading; a reading under way is not shown.
func (w *envWatch) Stop() { w.stop() }
