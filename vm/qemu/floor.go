package qemu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"sandbar/vm"
)

// FloorTimes is one bare boot of the guest kernel and initramfs: the
// least any guest boot can cost on this machine, which the boot benchmark
// compares system:ready against.
type FloorTimes struct {
	// Marker is QEMU start → sandbar-init's TrialMarker on the console.
	Marker time.Duration
	// Exit is QEMU start → QEMU exited after the guest powered off.
	Exit time.Duration
}

// floorDeadline bounds a floor boot whose ctx has no deadline; under
// emulation one takes a few seconds.
const floorDeadline = 2 * time.Minute

// BootFloor boots kernel and initrd with sandbar.trial=1, so sandbar-init
// prints TrialMarker and powers off at once, and times it. The QEMU
// command line is Boot's for the same CPUs and memory (machine type,
// accelerator, CPU model, devices, kernel arguments such as
// tsc_early_khz) less the disks and with the console on a pipe, so the
// two are comparable. memory is in bytes.
func (h *Hypervisor) BootFloor(ctx context.Context, kernel, initrd string, cpus int, memory uint64) (FloorTimes, error) {
	st := h.Check(ctx)
	if !st.Available {
		return FloorTimes{}, fmt.Errorf("%s: %w", st.Detail, vm.ErrUnavailable)
	}
	for _, f := range []string{kernel, initrd} {
		if _, err := os.Stat(f); err != nil {
			return FloorTimes{}, fmt.Errorf("guest image file %s is missing: run `sandbar image build`: %w", f, vm.ErrNotFound)
		}
	}
	dir, err := os.MkdirTemp(h.cfg.RuntimeDir, "sandbar-floor-")
	if err != nil {
		return FloorTimes{}, err
	}
	defer os.RemoveAll(dir)
	p, err := floorPlan(kernel, initrd, cpus, memory, dir, settings{
		Binary: h.cfg.Binary, Arch: h.arch(), KVM: st.Accelerated, TSCkHz: tscKHz(), SocketDir: dir,
	})
	if err != nil {
		return FloorTimes{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, floorDeadline)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, p.Binary, p.Args...)
	cmd.SysProcAttr = procAttr(true)
	console := &markerWriter{marker: []byte(TrialMarker)}
	stderr := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = console, stderr
	start := time.Now()
	console.start = start
	if err = p.start(cmd); err == nil {
		err = cmd.Wait()
	}
	exit := time.Since(start)
	marker, seen := console.seen()
	switch {
	case ctx.Err() != nil && !seen:
		return FloorTimes{}, fmt.Errorf("floor boot: no %q after %s: %w", TrialMarker, exit.Round(time.Millisecond), ctx.Err())
	case !seen:
		return FloorTimes{}, fmt.Errorf("floor boot: qemu exited (%v) without %q; console: %s; qemu: %s",
			err, TrialMarker, lastLine(console.String()), strings.TrimSpace(stderr.String()))
	case err != nil:
		return FloorTimes{}, fmt.Errorf("floor boot: qemu failed after the marker: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return FloorTimes{Marker: marker, Exit: exit}, nil
}

// floorPlan is the floor's QEMU command: Boot's plan for a diskless spec
// of the same size whose kernel arguments are the guest's own plus
// sandbar.trial=1, with the serial console on stdout.
func floorPlan(kernel, initrd string, cpus int, memory uint64, dir string, st settings) (plan, error) {
	spec := vm.Spec{
		Name: "floor", Kernel: kernel, Initramfs: initrd, CPUs: cpus, Memory: memory, Dir: dir,
		CommandLine: append(vm.GuestArgs(vm.GuestOptions{Root: -1, Agent: -1, Scratch: -1, Workspace: -1}), "sandbar.trial=1"),
	}
	p, err := buildPlan(spec, st)
	if err != nil {
		return plan{}, err
	}
	p.Args = append(p.Args, "-serial", "stdio")
	return p, nil
}

// markerWriter is the floor's console: it keeps the last bytes written
// and notes when the marker first appeared.
type markerWriter struct {
	marker []byte
	start  time.Time
	mu     sync.Mutex
	buf    []byte
	at     time.Duration
	found  bool
}

func (w *markerWriter) Write(p []byte) (int, error) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if !w.found && bytes.Contains(w.buf, w.marker) {
		w.found, w.at = true, now.Sub(w.start)
	}
	if keep := 8 << 10; len(w.buf) > keep {
		w.buf = w.buf[len(w.buf)-keep:]
	}
	return len(p), nil
}

func (w *markerWriter) seen() (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at, w.found
}

func (w *markerWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
