package session

import "errors"

// cleanups undo, newest first, what a verb or a run took, each registered
// as it is taken (firecracker-go-sdk's cleanupFuncs): a failure part-way
// gives back exactly what was taken, and nothing is listed twice.
type cleanups []func() error

// add registers the undoing of what was just taken.
func (c *cleanups) add(f func() error) { *c = append(*c, f) }

// run undoes everything registered, newest first, and forgets it; the
// errors are joined.
func (c *cleanups) run() error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		if err := (*c)[i](); err != nil {
			errs = append(errs, err)
		}
	}
	*c = nil
	return errors.Join(errs...)
}

// keep forgets what was registered: the caller succeeded and what it took
// is now the session's.
func (c *cleanups) keep() { *c = nil }
