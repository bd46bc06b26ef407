//go:build linux

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/guest/image"
	"sandbar/vm"
	"sandbar/vm/qemu"
)

// Sizes and counts the benchmarks use.
const (
	memory      = 2048 * vm.MiB
	defaultRuns = 10
	// idle is how long a guest sits after system:ready before its RSS is
	// read, so the figure is the idle guest's and not the boot's peak.
	idle       = 3 * time.Second
	streamSize = 100_000_000
	execWarmup = 3
)

// benchEnv is what every benchmark shares: one image and one backend, so
// the KVM trial happens once per run.
type benchEnv struct {
	img      *image.Image
	hv       *qemu.Hypervisor
	accel    string // "kvm" or "tcg"
	detail   string // the backend's verdict, in words
	stateDir string
	runs     int

	mu          sync.Mutex
	guestKernel string
}

var (
	envOnce sync.Once
	env     *benchEnv
	envSkip string
	envErr  error
	results table
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		os.RemoveAll(env.stateDir)
		if results.len() > 0 {
			results.markdown(os.Stdout, "Sandbar VM benchmarks", env.header())
		}
	}
	os.Exit(code)
}

// setup returns the shared environment, skipping b when there is no image
// or no QEMU.
func setup(b *testing.B) *benchEnv {
	b.Helper()
	if testing.Short() {
		b.Skip("boots real VMs; skipped with -short")
	}
	envOnce.Do(func() { env, envSkip, envErr = newEnv() })
	switch {
	case envErr != nil:
		b.Fatal(envErr)
	case envSkip != "":
		b.Skip(envSkip)
	}
	return env
}

func newEnv() (*benchEnv, string, error) {
	runs := defaultRuns
	if s := os.Getenv("SANDBAR_BENCH_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, "", fmt.Errorf("SANDBAR_BENCH_RUNS=%q: give a positive number of runs", s)
		}
		runs = n
	}
	dir := os.Getenv("SANDBAR_IMAGE_DIR")
	if dir == "" {
		return nil, "SANDBAR_IMAGE_DIR is not set: run `make bench`, which builds the guest image and sets it", nil
	}
	img, err := image.Latest(dir)
	if err != nil {
		return nil, fmt.Sprintf("SANDBAR_IMAGE_DIR=%s holds no usable guest image (%v): run `make image`", dir, err), nil
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, "qemu-system-x86_64 is not installed: run `sudo apt install qemu-system-x86`", nil
	}
	// A fresh state dir: the KVM verdict is proven on this machine, never
	// taken from a cache made elsewhere.
	state, err := os.MkdirTemp("", "sandbar-bench-state-")
	if err != nil {
		return nil, "", err
	}
	hv := qemu.New(qemu.Config{
		StateDir:   state,
		Accel:      os.Getenv("SANDBAR_ACCEL"),
		TrialImage: func() (string, string, error) { return img.Kernel, img.Initramfs, nil },
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := hv.Check(ctx)
	if !st.Available {
		os.RemoveAll(state)
		return nil, "QEMU is not usable: " + st.Detail, nil
	}
	accel := "tcg"
	if st.Accelerated {
		accel = "kvm"
	}
	fmt.Printf("[%s] %s; %d runs; image %.12s\n", accel, st.Detail, runs, img.Manifest.Hash)
	return &benchEnv{img: img, hv: hv, accel: accel, detail: st.Detail, stateDir: state, runs: runs}, "", nil
}

// header is the lines above the Markdown table: the machine and what ran.
func (e *benchEnv) header() []string {
	q := "QEMU (version unknown)"
	if out, err := exec.Command("qemu-system-x86_64", "--version").Output(); err == nil {
		q = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	e.mu.Lock()
	kernel := e.guestKernel
	e.mu.Unlock()
	return []string{
		"machine: " + machine(e.accel),
		"accel: " + e.accel + " (" + e.detail + ")",
		q + "; guest kernel " + kernel + fmt.Sprintf(", %d MiB guests; image %.12s", memory/vm.MiB, e.img.Manifest.Hash),
		"run " + time.Now().Format(time.DateOnly),
	}
}

// boot boots a guest with cpus vCPUs and 2 GiB in its own directory.
func (e *benchEnv) boot(b *testing.B, cpus int) *sandbox.Sandbox {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := sandbox.Boot(ctx, e.hv, e.img, sandbox.Options{Dir: b.TempDir(), CPUs: cpus, Memory: memory})
	if err != nil {
		b.Fatalf("boot (%d vCPUs): %v", cpus, err)
	}
	e.mu.Lock()
	e.guestKernel = sb.Ready.Kernel
	e.mu.Unlock()
	return sb
}

// bootKept boots a guest that is shut down when b ends.
func (e *benchEnv) bootKept(b *testing.B, cpus int) *sandbox.Sandbox {
	b.Helper()
	sb := e.boot(b, cpus)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
	})
	return sb
}

// report prints each series' line, records its row and reports its
// figures as b's metrics (instead of ns/op, which means nothing here).
func (e *benchEnv) report(b *testing.B, ss ...*series) {
	b.Helper()
	b.ReportMetric(0, "ns/op")
	for _, s := range ss {
		if len(s.vals) == 0 {
			continue
		}
		sum := summarize(s.vals)
		b.ReportMetric(sum.Median, s.Key+"-median-"+s.Unit)
		b.ReportMetric(sum.Min, s.Key+"-min-"+s.Unit)
		b.ReportMetric(sum.Max, s.Key+"-max-"+s.Unit)
		fmt.Println(line(e.accel, s))
		results.add(e.accel, s)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkBoot boots guests one after another, each preceded by a floor
// boot of the same size (the same kernel and initramfs with
// sandbar.trial=1, no disks: QEMU start to power-off), so the two see the
// same load and their ratio is fair. For each guest it times boot →
// system:ready and sb.Shutdown, and with the default 2 vCPUs also the
// idle guest's QEMU RSS.
func BenchmarkBoot(b *testing.B) {
	e := setup(b)
	for _, cpus := range []int{sandbox.DefaultCPUs, 1} {
		// No '=' in the name: it ends up in the VM directory's path,
		// which QEMU's -qmp option cannot take.
		b.Run(fmt.Sprintf("%dvcpu", cpus), func(b *testing.B) {
			e.benchBoot(b, cpus, cpus == sandbox.DefaultCPUs)
		})
	}
}

func (e *benchEnv) benchBoot(b *testing.B, cpus int, measureRSS bool) {
	size := fmt.Sprintf("%d vCPU, %d GiB", cpus, memory/(1024*vm.MiB))
	ready := &series{Metric: "boot → system:ready, " + size, Key: "ready", Unit: "ms"}
	floorExit := &series{Metric: "floor: bare kernel boot → QEMU exit, " + size, Key: "floor", Unit: "ms"}
	floorMarker := &series{Metric: "floor: bare kernel boot → init, " + size, Key: "floor-init", Unit: "ms"}
	ratio := &series{Metric: "ready / floor, " + size, Key: "ready-per-floor", Unit: "x"}
	shutdown := &series{Metric: "graceful shutdown, " + size, Key: "shutdown", Unit: "ms"}
	rss := &series{Metric: "QEMU RSS, idle guest, " + size, Key: "rss", Unit: "MiB"}
	for i := range e.runs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		ft, err := e.hv.BootFloor(ctx, e.img.Kernel, e.img.Initramfs, cpus, memory)
		if err != nil {
			cancel()
			b.Fatalf("floor boot %d: %v", i+1, err)
		}
		floorExit.add(ms(ft.Exit))
		floorMarker.add(ms(ft.Marker))

		sb := e.boot(b, cpus)
		ready.add(ms(sb.ReadyAfter))
		ratio.add(float64(sb.ReadyAfter) / float64(ft.Exit))
		var rssMiB float64
		if measureRSS {
			// Not waiting for an event: the idle period is the condition
			// being measured.
			select {
			case <-time.After(idle):
			case <-ctx.Done():
			}
			st, err := sb.Stats()
			if err != nil {
				cancel()
				b.Fatalf("boot %d: stats: %v", i+1, err)
			}
			rssMiB = float64(st.RSS) / float64(vm.MiB)
			rss.add(rssMiB)
		}
		start := time.Now()
		err = sb.Shutdown(ctx)
		took := time.Since(start)
		cancel()
		if err != nil {
			b.Fatalf("boot %d: shutdown: %v", i+1, err)
		}
		shutdown.add(ms(took))
		msg := fmt.Sprintf("[%s] run %d: floor %s (init %s), ready %s, shutdown %s", e.accel, i+1,
			ft.Exit.Round(time.Millisecond), ft.Marker.Round(time.Millisecond),
			sb.ReadyAfter.Round(time.Millisecond), took.Round(time.Millisecond))
		if measureRSS {
			msg += fmt.Sprintf(", idle RSS %.0f MiB", rssMiB)
		}
		b.Log(msg)
	}
	e.report(b, ready, floorExit, floorMarker, ratio, shutdown, rss)
}

// BenchmarkExec times exec of `true` on one booted guest, command to
// result, at least 100 times.
func BenchmarkExec(b *testing.B) {
	e := setup(b)
	sb := e.bootKept(b, sandbox.DefaultCPUs)
	n := max(100, 10*e.runs)
	rt := &series{Metric: fmt.Sprintf("exec `true` round trip, %d vCPU", sandbox.DefaultCPUs), Key: "exec", Unit: "ms"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range execWarmup + n {
		start := time.Now()
		res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil)
		took := time.Since(start)
		if err != nil {
			b.Fatalf("exec %d: %v", i+1, err)
		}
		if res.Code != 0 {
			b.Fatalf("exec %d: true exited %d (%s)", i+1, res.Code, res.Signal)
		}
		if i >= execWarmup {
			rt.add(ms(took))
		}
	}
	e.report(b, rt)
}

// BenchmarkStream times 100 MB of exec output from the guest to the host,
// zeros and random bytes, checking every byte arrived.
func BenchmarkStream(b *testing.B) {
	e := setup(b)
	sb := e.bootKept(b, sandbox.DefaultCPUs)
	runs := max(3, e.runs/3)
	for _, src := range []string{"zero", "urandom"} {
		b.Run(src, func(b *testing.B) {
			tp := &series{Metric: fmt.Sprintf("stream guest→host, 100 MB /dev/%s", src), Key: "stream", Unit: "MB/s"}
			for i := range runs {
				took, err := stream(sb, src)
				if err != nil {
					b.Fatalf("run %d: %v", i+1, err)
				}
				tp.add(streamSize / 1e6 / took.Seconds())
				b.Logf("[%s] run %d: %s in %s", e.accel, i+1, src, took.Round(time.Millisecond))
			}
			e.report(b, tp)
		})
	}
}

// stream runs `head -c 100000000 /dev/<src>` in the guest and returns how
// long it took, with an error unless exactly that many bytes arrived (and,
// for zeros, only zeros).
func stream(sb *sandbox.Sandbox, src string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := &countingWriter{zeros: src == "zero"}
	var errOut bytes.Buffer
	argv := []string{"head", "-c", strconv.Itoa(streamSize), "/dev/" + src}
	start := time.Now()
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: argv}, out, &errOut)
	took := time.Since(start)
	switch {
	case err != nil:
		return 0, fmt.Errorf("exec %q: %w", argv, err)
	case res.Code != 0:
		return 0, fmt.Errorf("%q exited %d: %s", argv, res.Code, strings.TrimSpace(errOut.String()))
	case out.n != streamSize:
		return 0, fmt.Errorf("%q: %d bytes arrived, want %d", argv, out.n, streamSize)
	case out.nonzero > 0:
		return 0, fmt.Errorf("%q: %d bytes arrived changed (not zero)", argv, out.nonzero)
	}
	return took, nil
}

// countingWriter counts what it is given and, when zeros is set, the
// bytes that are not zero.
type countingWriter struct {
	zeros      bool
	n, nonzero int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if w.zeros {
		for _, c := range p {
			if c != 0 {
				w.nonzero++
			}
		}
	}
	return len(p), nil
}
