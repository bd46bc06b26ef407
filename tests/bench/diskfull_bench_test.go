//go:build linux

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/vm"
)

// BenchmarkDiskFullPause times how soon Sandbar hears that QEMU paused a
// guest whose scratch disk found the host's disk full: the scratch disk
// lives on a small tmpfs, a host ballast file leaves it 8 MiB, and the
// guest writes 32 MiB. The delay runs from QEMU's own event timestamp
// (when it stopped the VM) to the vm.DiskEvent in hand. Then the ballast
// goes and the guest is resumed: resume is the Resume call to QEMU's
// RESUME event, and every round the guest's write completes whole.
// Mounting the tmpfs needs root (CI is root); elsewhere it skips.
func BenchmarkDiskFullPause(b *testing.B) {
	e := setup(b)
	mnt := filepath.Join(b.TempDir(), "small disk")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512m,mode=0700", "sandbar-bench", mnt).CombinedOutput(); err != nil {
		b.Skipf("mount a small tmpfs (needs root): %v: %s", err, bytes.TrimSpace(out))
	}
	// Registered first, so it runs last: after the guest's shutdown.
	b.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			b.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb, err := sandbox.Boot(ctx, e.hv, e.img, sandbox.Options{
		Dir: b.TempDir(), CPUs: 1, Memory: 512 * vm.MiB,
		Scratch: filepath.Join(mnt, "scratch.img"), ScratchSize: 1 << 30,
	})
	if err != nil {
		b.Fatalf("boot: %v", err)
	}
	e.mu.Lock()
	e.guestKernel = sb.Ready.Kernel
	e.mu.Unlock()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sb.Kill()
		sb.Wait(ctx)
	})
	p, ok := sb.Machine.(vm.DiskPauser)
	if !ok {
		b.Fatal("the QEMU machine is not a vm.DiskPauser")
	}
	events := p.DiskEvents()
	next := func(paused bool) vm.DiskEvent {
		b.Helper()
		timer := time.NewTimer(3 * time.Minute)
		defer timer.Stop()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					b.Fatal("the VM stopped")
				}
				if ev.Paused == paused {
					return ev
				}
			case <-timer.C:
				b.Fatalf("no DiskEvent{Paused: %v} within 3 minutes", paused)
			}
		}
	}
	ballast := filepath.Join(mnt, "ballast")
	pause := &series{Metric: "full disk: QEMU pauses the VM → Sandbar hears it", Key: "diskfull-pause", Unit: "ms"}
	resume := &series{Metric: "full disk: room again → the VM runs (cont)", Key: "diskfull-resume", Unit: "ms"}
	for i := range e.runs {
		var st syscall.Statfs_t
		if err := syscall.Statfs(mnt, &st); err != nil {
			b.Fatal(err)
		}
		free := int64(st.Bavail) * st.Bsize
		if free < 48<<20 {
			b.Fatalf("round %d: only %d MiB free on the tmpfs", i+1, free>>20)
		}
		if err := writeZeros(ballast, free-8<<20); err != nil {
			b.Fatalf("ballast: %v", err)
		}
		done := make(chan error, 1)
		go func() {
			var out bytes.Buffer
			res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{User: sandbox.UserRoot, Argv: []string{"sh", "-c",
				fmt.Sprintf("dd if=/dev/zero of=/var/tmp/fill%d bs=1M count=32 conv=fsync 2>&1 && stat -c %%s /var/tmp/fill%d", i, i)}}, &out, &out)
			if err == nil && (res.Code != 0 || string(bytes.TrimSpace(lastLine(out.Bytes()))) != fmt.Sprint(32<<20)) {
				err = fmt.Errorf("dd exited %d: %s", res.Code, out.String())
			}
			done <- err
		}()
		ev := next(true)
		pause.add(ms(time.Since(ev.Time)))
		if !ev.NoSpace {
			b.Fatalf("round %d: paused, but not for space: %+v", i+1, ev)
		}
		if err := os.Remove(ballast); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := p.Resume(ctx); err != nil {
			b.Fatalf("resume: %v", err)
		}
		next(false)
		resume.add(ms(time.Since(start)))
		if err := <-done; err != nil {
			b.Fatalf("round %d: the guest's write after resume: %v", i+1, err)
		}
	}
	e.report(b, pause, resume)
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// writeZeros writes a file of n bytes (allocated, not sparse).
func writeZeros(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for n > 0 && err == nil {
		var k int
		k, err = f.Write(buf[:min(int64(len(buf)), n)])
		n -= int64(k)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
