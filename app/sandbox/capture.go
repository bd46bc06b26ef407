package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sandbar/guest/image"
	"sandbar/guest/protocol"
	"sandbar/vm"
	"sandbar/vm/caplog"
)

// CaptureOptions say what Capture copies and where.
type CaptureOptions struct {
	// Dir is the directory the capture machine owns (its console log,
	// sockets).
	Dir string
	// Scratch is the scratch disk of a machine that prepared an
	// environment and has powered off; it is attached read-only.
	Scratch string
	// Out is the disk to fill, made (sparse, Size bytes) if missing and
	// formatted by the guest.
	Out  string
	Size int64
	// Timeout bounds the capture (10 minutes when 0).
	Timeout time.Duration
}

// Captured is what a capture copied, as its guest reported it.
type Captured struct {
	Files, Bytes   int64
	WorkspacePaths int
	Took           time.Duration
}

// Capture boots img's kernel and init alone (no supervisor, no network,
// nothing of the scratch disk's runs) to copy what a machine that
// prepared an environment left on its scratch disk into Out: the root's
// changes and the workspace's ignored files, as a prepared environment's
// disk (vm.GuestOptions.Capture). It returns once the machine has
// powered off, with the guest's count of what it copied, or the
// console's last lines when the capture failed.
func Capture(ctx context.Context, hv vm.Hypervisor, img *image.Image, o CaptureOptions) (Captured, error) {
	if img == nil {
		return Captured{}, fmt.Errorf("no guest image: run `sandbar image build`: %w", image.ErrNotBuilt)
	}
	if o.Dir == "" || o.Scratch == "" || o.Out == "" || o.Size <= 0 {
		return Captured{}, errors.New("sandbox: a capture needs its directory, the scratch disk, the disk to fill and its size")
	}
	if _, err := os.Stat(o.Scratch); err != nil {
		return Captured{}, fmt.Errorf("the preparing machine's disk: %w", err)
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return Captured{}, err
	}
	if err := ensureScratch(o.Out, o.Size); err != nil {
		return Captured{}, err
	}
	spec := vm.Spec{
		Name: "capture-" + filepath.Base(o.Dir), Kernel: img.Kernel, Initramfs: img.Initramfs,
		CPUs: 1, Memory: 512 * vm.MiB, Network: vm.NetworkOff, Dir: o.Dir,
		ConsoleLog: filepath.Join(o.Dir, "capture-console.log"),
		Disks: []vm.Disk{
			{Path: img.RootFS, ReadOnly: true},
			{Path: o.Scratch, ReadOnly: true},
			{Path: o.Out},
		},
	}
	g := vm.GuestOptions{Root: 0, Agent: -1, Scratch: 1, Workspace: -1, Capture: 2, Share: vm.ShareNone, Net: "none",
		Channel: hv.Info().Channel, Time: time.Now()}
	spec.CommandLine = vm.GuestArgs(g)
	caplog.Remove(spec.ConsoleLog)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	m, err := hv.Boot(ctx, spec)
	if err != nil {
		return Captured{}, err
	}
	werr := m.Wait(ctx)
	if ctx.Err() != nil {
		m.Kill()
		m.Wait(context.Background())
	}
	took := time.Since(start)
	tail := ConsoleTail(spec.ConsoleLog, 40)
	for _, line := range strings.Split(tail, "\n") {
		if rest, ok := strings.CutPrefix(line, protocol.CaptureMarker); ok {
			c, perr := parseCaptured(rest)
			if perr != nil {
				return Captured{}, perr
			}
			c.Took = took
			return c, nil
		}
	}
	why := "the machine powered off without saying it was done"
	switch {
	case ctx.Err() != nil:
		why = fmt.Sprintf("no end after %s", o.Timeout)
	case werr != nil:
		why = werr.Error()
	}
	return Captured{}, fmt.Errorf("capture the prepared environment: %s\nlast console lines:\n%s", why, lastLines(tail, 12))
}

// parseCaptured reads the marker line's " files=N bytes=N
// workspace_paths=N".
func parseCaptured(s string) (Captured, error) {
	var c Captured
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return c, fmt.Errorf("the capture's report %q does not parse", strings.TrimSpace(s))
		}
		switch k {
		case "files":
			c.Files = n
		case "bytes":
			c.Bytes = n
		case "workspace_paths":
			c.WorkspacePaths = int(n)
		}
	}
	return c, nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
