package qemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sandbar/vm"
)

// suspendTimeout bounds a Suspend or a Resume whose context has no
// deadline: a 2 GiB guest's state is written at disk speed, and its
// untouched pages cost a few bytes each.
const suspendTimeout = 5 * time.Minute

// statePoll is how often a migration's progress is asked.
const statePoll = 20 * time.Millisecond

// Suspend implements vm.Suspender with QEMU's migration to a file: the
// guest is stopped first (so the state is taken in one pass, never
// chasing pages a running guest dirties), its state goes through a file
// descriptor handed over the monitor (getfd; QEMU 7.2 has no file:
// migration URI), and QEMU quits once it is written. Completion of the
// migration also flushes and releases the disks, so the files the
// resumed VM opens hold every write the guest made.
func (m *machine) Suspend(ctx context.Context, path string) error {
	if m.exit.Exited() {
		return vm.ErrNotRunning
	}
	if len(m.plan.Virtiofsd) > 0 {
		return errors.New("this VM has a virtio-fs share, whose daemon's state QEMU cannot save: suspend needs a VM without shares")
	}
	ctx, cancel := withDefaultTimeout(ctx, suspendTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	tmp := path + ".part"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("suspend: state file: %w", err)
	}
	defer os.Remove(tmp) // nothing once it is renamed
	defer f.Close()
	c, err := dialQMP(m.plan.QMP, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("suspend: %w", err)
	}
	defer c.Close()
	start := time.Now()
	if err := c.execute("stop", nil, nil); err != nil {
		return fmt.Errorf("suspend: %w", err)
	}
	fail := func(err error) error {
		if cerr := c.execute("cont", nil, nil); cerr != nil {
			m.log.Error("the guest stays stopped after a failed suspend", "err", cerr)
		}
		return fmt.Errorf("suspend: %w", err)
	}
	if m.plan.IgnoreShared {
		// On for a template's own boot, whose RAM stays in its file; off
		// again for a VM that loaded a template (the capability outlives
		// the load) and now saves itself whole, for a resume that
		// knows nothing of templates.
		if err := setIgnoreShared(c, !m.plan.FromTemplate); err != nil {
			return fail(err)
		}
	}
	// The default rate limit (128 MiB/s) is for a live migration over a
	// network; this one writes a stopped guest to a local file.
	if err := c.execute("migrate-set-parameters", map[string]any{"max-bandwidth": int64(1) << 40}, nil); err != nil {
		return fail(err)
	}
	if err := c.executeWithFile("getfd", map[string]any{"fdname": "suspend"}, nil, f); err != nil {
		return fail(err)
	}
	if err := c.execute("migrate", map[string]any{"uri": "fd:suspend"}, nil); err != nil {
		return fail(err)
	}
	for {
		var st struct {
			Status    string `json:"status"`
			ErrorDesc string `json:"error-desc"`
		}
		if err := c.execute("query-migrate", nil, &st); err != nil {
			return fail(err)
		}
		switch st.Status {
		case "completed":
		case "failed", "cancelled":
			return fail(fmt.Errorf("saving the guest's state %s: %s", st.Status, st.ErrorDesc))
		default:
			select {
			case <-ctx.Done():
				c.execute("migrate_cancel", nil, nil)
				return fail(fmt.Errorf("saving the guest's state: %w", ctx.Err()))
			case <-m.exit.Done():
				return fmt.Errorf("suspend: qemu exited while saving: %s", strings.TrimSpace(m.stderr.String()))
			case <-time.After(statePoll):
			}
			continue
		}
		break
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	syncDir(filepath.Dir(path))
	m.log.Info("guest state saved", "file", path, "took", time.Since(start).Round(time.Millisecond))
	// QEMU may close the monitor before it replies to quit.
	c.execute("quit", nil, nil)
	select {
	case <-m.exit.Done():
		return nil
	case <-ctx.Done():
		m.Kill()
		<-m.exit.Done()
		return nil // the state is whole; this QEMU only had to end
	}
}

// resumeIncoming loads the state file QEMU was started with (-incoming
// defer, the file at fd) and runs the guest. The host's channel is
// connected before the load starts: a guest whose port found no host
// after the load would read end-of-file and shut its supervisor down.
func (m *machine) resumeIncoming(ctx context.Context, fd int) error {
	ctx, cancel := withDefaultTimeout(ctx, suspendTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	exitErr := func() error {
		return fmt.Errorf("%w: qemu could not load it: %s", vm.ErrBadState, strings.TrimSpace(m.stderr.String()))
	}
	// QEMU makes its sockets one after another: the channel's may
	// answer a moment before the monitor's listens.
	var c *qmpConn
	for {
		var err error
		if c, err = dialQMP(m.plan.QMP, time.Until(deadline)); err == nil {
			break
		}
		select {
		case <-m.exit.Done():
			return exitErr()
		case <-ctx.Done():
			return fmt.Errorf("connect to QEMU's monitor: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer c.Close()
	if m.plan.IgnoreShared {
		if err := setIgnoreShared(c, true); err != nil {
			return err
		}
	}
	if err := c.execute("migrate-incoming", map[string]any{"uri": fmt.Sprintf("fd:%d", fd)}, nil); err != nil {
		if m.exit.WaitFor(time.Second) {
			return exitErr()
		}
		return err
	}
	for {
		var st struct {
			Status string `json:"status"`
		}
		if err := c.execute("query-status", nil, &st); err != nil {
			if m.exit.WaitFor(time.Second) {
				return exitErr() // a state QEMU cannot load ends it
			}
			return err
		}
		switch st.Status {
		case "inmigrate":
			select {
			case <-ctx.Done():
				return fmt.Errorf("load the saved state: %w", ctx.Err())
			case <-m.exit.Done():
				return exitErr()
			case <-time.After(statePoll):
			}
			continue
		case "running":
			return nil
		case "paused", "postmigrate", "prelaunch":
			// Suspend stopped the guest before saving it, and a guest
			// saved stopped comes back stopped.
			return c.execute("cont", nil, nil)
		default:
			return fmt.Errorf("%w: after the load the VM is %q", vm.ErrBadState, st.Status)
		}
	}
}

// setIgnoreShared sets x-ignore-shared, which leaves RAM that lives in a
// shared file (a template's) out of a migration: only the devices' state
// goes through the stream. Both ends must agree on it.
func setIgnoreShared(c *qmpConn, on bool) error {
	return c.execute("migrate-set-capabilities", map[string]any{
		"capabilities": []map[string]any{{"capability": "x-ignore-shared", "state": on}},
	}, nil)
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// syncDir makes a rename in dir durable; where it fails, the rename is
// still done, only not yet on the disk.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

var (
	_ vm.Suspender = (*machine)(nil)
	_ vm.Resumer   = (*Hypervisor)(nil)
)
