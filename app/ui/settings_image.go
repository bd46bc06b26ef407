package ui

import (
	"context"
	"errors"
	"sync"
	"time"

	"fyne.io/fyne/v2/data/binding"

	"sandbar/app/imagebuild"
)

// imageBuild is the guest image's state and its one build at a time,
// shared by Settings and the first-run window: both bind to the same
// values, so a build started in one shows its progress in the other.
// The bindings are set on the UI goroutine only.
type imageBuild struct {
	u        *UI
	status   binding.String // what image sessions boot, or that there is none
	missing  binding.Bool   // no image is built
	running  binding.Bool
	stage    binding.String
	progress binding.Float
	problem  binding.String // why the last build failed
	cancel   context.CancelFunc
}

func newImageBuild(u *UI) *imageBuild {
	return &imageBuild{u: u, status: binding.NewString(), missing: binding.NewBool(), running: binding.NewBool(),
		stage: binding.NewString(), progress: binding.NewFloat(), problem: binding.NewString()}
}

// refresh rereads the image's status off the UI goroutine.
func (b *imageBuild) refresh() {
	s := b.u.Settings
	if s == nil {
		b.status.Set("Unknown: no settings backend")
		return
	}
	b.u.background(func(context.Context) {
		text, err := s.ImageStatus()
		b.u.post(func() {
			missing := errors.Is(err, imagebuild.ErrNotBuilt)
			switch {
			case missing:
				text = "No guest image is built yet: sessions cannot start until one is."
			case err != nil:
				text = sentence(err.Error())
			}
			b.status.Set(text)
			b.missing.Set(missing)
		})
	})
}

// start begins a build unless one runs; progress arrives through the
// bindings at most once per uiFrame.
func (b *imageBuild) start() {
	s := b.u.Settings
	if running, _ := b.running.Get(); running || s == nil {
		return
	}
	b.running.Set(true)
	b.problem.Set("")
	b.stage.Set("Starting the build…")
	b.progress.Set(0)
	stop := b.u.goUntil(func(ctx context.Context) {
		type step struct {
			stage string
			frac  float64
		}
		var mu sync.Mutex
		var last step
		fresh := false
		done := make(chan error, 1)
		go func() {
			done <- s.RebuildImage(ctx, func(stage string, frac float64) {
				mu.Lock()
				last, fresh = step{stage, frac}, true
				mu.Unlock()
			})
		}()
		tick := time.NewTicker(uiFrame)
		defer tick.Stop()
		for {
			select {
			case err := <-done:
				b.u.post(func() { b.finish(err) })
				return
			case <-tick.C:
				mu.Lock()
				st, ok := last, fresh
				fresh = false
				mu.Unlock()
				if ok {
					b.u.post(func() {
						b.stage.Set(st.stage)
						b.progress.Set(st.frac)
					})
				}
			}
		}
	})
	b.cancel = stop
}

// stopBuild cancels a running build.
func (b *imageBuild) stopBuild() {
	if b.cancel != nil {
		b.cancel()
	}
}

func (b *imageBuild) finish(err error) {
	b.running.Set(false)
	b.cancel = nil
	switch {
	case errors.Is(err, context.Canceled):
		b.stage.Set("Build cancelled.")
	case err != nil:
		b.stage.Set("")
		b.problem.Set(sentence(err.Error()))
	default:
		b.stage.Set("Image ready.")
		b.progress.Set(1)
	}
	b.refresh()
}
