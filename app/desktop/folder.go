package desktop

import (
	"context"
	"errors"
)

var (
	// ErrCanceled: the person closed the chooser without picking.
	ErrCanceled = errors.New("no folder was chosen")
	// ErrUnavailable: the desktop offers no folder chooser (no portal on
	// the session bus, none answering in time, no session bus at all).
	ErrUnavailable = errors.New("the desktop's folder chooser is not available")
)

// ChooseFolder asks the person for one folder, titled title, and returns
// its path. It blocks until the person answers or ctx ends; call it off
// the UI goroutine.
type ChooseFolder func(ctx context.Context, title string) (string, error)
