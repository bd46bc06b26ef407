//go:build linux

package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/tests/remotehosttest"
	"sandbar/vm"
	"sandbar/vm/libvirt"
)

// BenchmarkRemote boots the guest on a libvirt host over SSH (the
// namespace host of remotehosttest: the same machine, so the figures are
// the tunnel's and libvirt's cost, not a network's) and on the local QEMU,
// alternately in the same run: Boot start → system:ready for each and
// their ratio (the remote's includes the SSH login, the upload check
// and libvirt's start), the bytes a boot after the first uploads, and
// exec's round trip over the carried channel against the local one.
// Needs root (it makes namespaces); skips otherwise.
func BenchmarkRemote(b *testing.B) {
	e := setup(b)
	h := remotehosttest.Start(b)
	kh := filepath.Join(b.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(h.KnownHosts), 0o600); err != nil {
		b.Fatal(err)
	}
	tg, err := libvirt.ParseTarget(h.URL())
	if err != nil {
		b.Fatal(err)
	}
	// Its log says where each boot's time went (connect, upload check,
	// disks, libvirt's start, the streams).
	rhv := libvirt.New(libvirt.Config{Name: "bench", Target: tg, Dir: h.Dir, Owner: "bench", Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Auth: libvirt.Auth{KnownHosts: kh, IdentityFiles: []string{h.IdentityFile}}})
	boot := func(hv vm.Hypervisor, name string) *sandbox.Sandbox {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		sb, err := sandbox.Boot(ctx, hv, e.img, sandbox.Options{Name: name, Dir: filepath.Join(b.TempDir(), name), CPUs: sandbox.DefaultCPUs, Memory: memory, ScratchSize: 1 << 30})
		if err != nil {
			b.Fatalf("boot %s: %v", name, err)
		}
		return sb
	}
	shut := func(sb *sandbox.Sandbox) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := sb.Shutdown(ctx); err != nil {
			b.Fatalf("shutdown: %v", err)
		}
	}
	// The first remote boot fills the host's cache.
	start := time.Now()
	shut(boot(rhv, "sandbar-warm"))
	b.Logf("[%s] first remote boot: %s, %d bytes uploaded", e.accel, time.Since(start).Round(time.Millisecond), rhv.Uploaded())
	first := rhv.Uploaded()

	size := fmt.Sprintf("%d vCPU, %d GiB", sandbox.DefaultCPUs, memory/(1024*vm.MiB))
	local := &series{Metric: "local QEMU: boot → system:ready, " + size, Key: "local-ready", Unit: "ms"}
	remote := &series{Metric: "remote libvirt over SSH: boot → system:ready, " + size, Key: "remote-ready", Unit: "ms"}
	ratio := &series{Metric: "remote / local boot → system:ready", Key: "remote-per-local", Unit: "x"}
	upload := &series{Metric: "bytes a remote boot after the first uploads", Key: "upload", Unit: "B"}
	runs := max(3, e.runs/3)
	for i := range runs {
		before := rhv.Uploaded()
		ls := boot(e.hv, fmt.Sprintf("sandbar-local%d", i))
		shut(ls)
		rs := boot(rhv, fmt.Sprintf("sandbar-remote%d", i))
		shut(rs)
		local.add(ms(ls.ReadyAfter))
		remote.add(ms(rs.ReadyAfter))
		ratio.add(float64(rs.ReadyAfter) / float64(ls.ReadyAfter))
		upload.add(float64(rhv.Uploaded() - before))
		b.Logf("[%s] run %d: local %s, remote %s (hypervisor start %s)", e.accel, i+1,
			ls.ReadyAfter.Round(time.Millisecond), rs.ReadyAfter.Round(time.Millisecond), rs.Booted.Round(time.Millisecond))
	}

	execLocal := &series{Metric: "local: exec `true` round trip", Key: "exec-local", Unit: "ms"}
	execRemote := &series{Metric: "remote: exec `true` round trip over SSH", Key: "exec-remote", Unit: "ms"}
	for _, c := range []struct {
		hv vm.Hypervisor
		s  *series
	}{{e.hv, execLocal}, {rhv, execRemote}} {
		sb := boot(c.hv, "sandbar-exec")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		for i := range execWarmup + 50 {
			t0 := time.Now()
			res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil)
			if err != nil || res.Code != 0 {
				cancel()
				b.Fatalf("exec %d: %v (exit %d)", i+1, err, res.Code)
			}
			if i >= execWarmup {
				c.s.add(ms(time.Since(t0)))
			}
		}
		cancel()
		shut(sb)
	}
	b.Logf("[%s] first remote boot uploaded %d bytes", e.accel, first)
	e.report(b, local, remote, ratio, upload, execLocal, execRemote)
}
