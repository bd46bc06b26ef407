//go:build linux

package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/app/session"
	"sandbar/vm"
)

// procStatus reads a field of /proc/PID/status as a number (kB fields
// in bytes).
func procStatus(pid int, field string) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			v := strings.TrimSpace(rest)
			kb := strings.HasSuffix(v, " kB")
			n, err := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
			if kb {
				n <<= 10
			}
			return n, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// settledRSS waits until pid's RSS has not fallen by more than 16 MiB for
// three seconds (at most bound) and returns it: the boot's frees are
// reported two seconds after they happen.
func settledRSS(pid int, bound time.Duration) (uint64, error) {
	end := time.Now().Add(bound)
	last, err := procStatus(pid, "VmRSS")
	since := time.Now()
	for err == nil && time.Now().Before(end) {
		time.Sleep(500 * time.Millisecond)
		var rss uint64
		if rss, err = procStatus(pid, "VmRSS"); err != nil {
			break
		}
		if rss+16*vm.MiB < last {
			last, since = rss, time.Now()
			continue
		}
		if time.Since(since) >= 3*time.Second {
			return rss, nil
		}
	}
	return last, err
}

func mib(n uint64) float64 { return float64(n) / float64(vm.MiB) }

// BenchmarkIdleMemory measures what a guest gives back: QEMU's RSS
// settled after boot, right after the guest allocated, touched and freed
// 1 GiB (dd's buffer), and settled again after; how long the return
// took; and what an idle guest costs: QEMU's CPU and its context
// switches a second over 10 s.
func BenchmarkIdleMemory(b *testing.B) {
	e := setup(b)
	runs := max(1, min(e.runs, 3))
	before := &series{Metric: "QEMU RSS, idle 2 GiB guest before a 1 GiB allocation", Key: "rss-before", Unit: "MiB"}
	peak := &series{Metric: "QEMU RSS right after the 1 GiB was freed", Key: "rss-peak", Unit: "MiB"}
	after := &series{Metric: "QEMU RSS once the freed 1 GiB was returned", Key: "rss-after", Unit: "MiB"}
	ratio := &series{Metric: "RSS after a freed 1 GiB allocation / before it (target ≤ 1.2×)", Key: "rss-ratio", Unit: "x"}
	back := &series{Metric: "freed 1 GiB → back to the host", Key: "return", Unit: "ms"}
	cpu := &series{Metric: "idle guest's QEMU CPU (% of one core), 2 vCPU", Key: "idle-cpu", Unit: "%"}
	wakes := &series{Metric: "idle guest's QEMU context switches a second", Key: "idle-cs", Unit: "/s"}
	for i := range runs {
		sb := e.boot(b, sandbox.DefaultCPUs)
		pid := sb.PID()
		rss0, err := settledRSS(pid, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		// Idle cost, over 10 s of a guest that waits.
		st0, _ := sb.Stats()
		cs0 := switches(pid)
		t0 := time.Now()
		time.Sleep(10 * time.Second) // the idle period is what is measured
		st1, _ := sb.Stats()
		cs1 := switches(pid)
		el := time.Since(t0)
		cpu.add(100 * float64(st1.CPUTime-st0.CPUTime) / float64(el))
		wakes.add(float64(cs1-cs0) / el.Seconds())

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=1G", "count=1", "status=none"}}, nil, nil)
		cancel()
		if err != nil || res.Code != 0 {
			b.Fatalf("dd: %v (exit %d)", err, res.Code)
		}
		freed := time.Now()
		rss1, _ := procStatus(pid, "VmRSS")
		var rss2 uint64
		for time.Since(freed) < time.Minute {
			if rss2, err = procStatus(pid, "VmRSS"); err != nil {
				b.Fatal(err)
			}
			if rss2 <= rss0+64*vm.MiB {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		back.add(ms(time.Since(freed)))
		rss2, _ = settledRSS(pid, 20*time.Second)
		before.add(mib(rss0))
		peak.add(mib(rss1))
		after.add(mib(rss2))
		ratio.add(float64(rss2) / float64(rss0))
		b.Logf("[%s] run %d: RSS %.0f MiB before, %.0f right after, %.0f after (%.2f×); idle CPU %.1f%%, %.0f switches/s",
			e.accel, i+1, mib(rss0), mib(rss1), mib(rss2), float64(rss2)/float64(rss0), cpu.vals[i], wakes.vals[i])
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		sb.Shutdown(sctx)
		scancel()
	}
	e.report(b, before, peak, after, ratio, back, cpu, wakes)
}

// switches is the sum of a process's threads' context switches.
func switches(pid int) uint64 {
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	var n uint64
	for _, d := range dirs {
		tid, _ := strconv.Atoi(filepath.Base(d))
		for _, f := range []string{"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"} {
			v, _ := procStatusTask(pid, tid, f)
			n += v
		}
	}
	return n
}

func procStatusTask(pid, tid int, field string) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			return strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s", field)
}

// BenchmarkSuspend times the suspend and the resume of a 2 GiB guest
// that holds 300 MB (random data in its tmpfs: pages the migration
// cannot skip as zero), from the request to the VM's end and from QEMU's
// start to the guest supervisor's answer, and the state file's size.
func BenchmarkSuspend(b *testing.B) {
	e := setup(b)
	runs := max(1, min(e.runs, 3))
	sus := &series{Metric: "suspend a 2 GiB guest holding 300 MB (stop → state on disk → QEMU gone)", Key: "suspend", Unit: "ms"}
	res := &series{Metric: "resume it (QEMU start → state loaded → supervisor answers)", Key: "resume", Unit: "ms"}
	size := &series{Metric: "its state file", Key: "state", Unit: "MiB"}
	for i := range runs {
		dir := b.TempDir()
		opts := sandbox.Options{Dir: dir, CPUs: sandbox.DefaultCPUs, Memory: memory}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		sb, err := sandbox.Boot(ctx, e.hv, e.img, opts)
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		fill := "head -c 30000000 /dev/urandom > /dev/shm/seed && for i in 1 2 3 4 5 6 7 8 9 10; do cat /dev/shm/seed; done > /dev/shm/fill && rm /dev/shm/seed"
		r, err := sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: []string{"sh", "-c", fill}, User: sandbox.UserRoot}, nil, nil)
		if err != nil || r.Code != 0 {
			cancel()
			b.Fatalf("fill 300 MB: %v (exit %d)", err, r.Code)
		}
		state := filepath.Join(dir, "vm.state")
		start := time.Now()
		if err := sb.Suspend(ctx, state); err != nil {
			cancel()
			b.Fatalf("suspend: %v", err)
		}
		sb.Wait(ctx)
		sus.add(ms(time.Since(start)))
		if fi, err := os.Stat(state); err == nil {
			size.add(mib(uint64(fi.Size())))
		}
		start = time.Now()
		sb, err = sandbox.Resume(ctx, e.hv, e.img, opts, state)
		if err != nil {
			cancel()
			b.Fatalf("resume: %v", err)
		}
		res.add(ms(time.Since(start)))
		b.Logf("[%s] run %d: suspend %.0f ms, state %.0f MiB, resume %.0f ms", e.accel, i+1, sus.vals[i], size.vals[len(size.vals)-1], res.vals[i])
		sb.Shutdown(ctx)
		cancel()
	}
	e.report(b, sus, res, size)
}

// BenchmarkIdleSession measures what a session waiting for the person
// costs the host's CPU, all of it: its QEMU and the engine (the real
// Manager, in this process: its log, network, clock and disk pollers),
// over 10 s, as % of one core. The agent waits as a person's does after
// an interrupt (a custom agent that ignores SIGINT and sleeps).
func BenchmarkIdleSession(b *testing.B) {
	e := setup(b)
	runs := max(1, min(e.runs, 3))
	root := b.TempDir()
	repo := emptyRepo(b, root)
	m, paths := e.manager(b, root)
	qemuCPU := &series{Metric: "waiting session: its QEMU's CPU (% of one core), 2 vCPU, 2 GiB", Key: "idle-session-qemu", Unit: "%"}
	engineCPU := &series{Metric: "waiting session: the engine's CPU (% of one core)", Key: "idle-session-engine", Unit: "%"}
	total := &series{Metric: "waiting session: engine + QEMU (% of one core)", Key: "idle-session", Unit: "%"}
	for i := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		s, err := m.Start(ctx, session.Options{Repo: repo, CPUs: 2, MemoryMiB: 2048, DiskGiB: 1,
			Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", "trap '' INT; while :; do sleep 3600; done"}}})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		for {
			cur, err := m.Get(ctx, s.ID)
			if err != nil || ctx.Err() != nil {
				cancel()
				b.Fatalf("session %s did not start: %v", s.ID, err)
			}
			if cur.State == session.StateRunning && cur.Activity == session.ActivityWorking {
				break
			}
			if !session.Live(cur.State) {
				cancel()
				b.Fatalf("session %s ended: %s %q", s.ID, cur.State, cur.Reason)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := m.Interrupt(ctx, s.ID); err != nil {
			cancel()
			b.Fatal(err)
		}
		pidText, err := os.ReadFile(filepath.Join(paths.SessionDir(s.ID).VMDir(), "vm.pid"))
		var pid int
		if _, serr := fmt.Sscan(string(pidText), &pid); err != nil || serr != nil {
			cancel()
			b.Fatalf("the session's QEMU pid: %v %v", err, serr)
		}
		settledRSS(pid, 30*time.Second) // past the boot's and the agent's start's work
		q0, s0, t0 := procCPU(pid), selfCPU(), time.Now()
		time.Sleep(10 * time.Second) // the idle period is what is measured
		q1, s1, el := procCPU(pid), selfCPU(), time.Since(t0)
		// A QEMU that is gone reads 0 s of CPU: that is no figure.
		if cur, err := m.Get(ctx, s.ID); err != nil || cur.State != session.StateRunning || !qemuRuns(pid) {
			cancel()
			b.Fatalf("run %d: the session's QEMU (pid %d) did not run through the measurement: %+v %v", i+1, pid, cur, err)
		}
		qemuCPU.add(100 * float64(q1-q0) / float64(el))
		engineCPU.add(100 * float64(s1-s0) / float64(el))
		total.add(qemuCPU.vals[i] + engineCPU.vals[i])
		b.Logf("[%s] run %d: waiting session: QEMU %.1f%%, engine %.1f%% of one core", e.accel, i+1, qemuCPU.vals[i], engineCPU.vals[i])
		m.Stop(ctx, s.ID)
		m.Remove(context.Background(), s.ID, true)
		cancel()
	}
	e.report(b, total, qemuCPU, engineCPU)
}

// qemuRuns reports whether pid is still a QEMU.
func qemuRuns(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.HasPrefix(string(b), "qemu-system")
}

// procCPU is a process's user and system CPU time so far (/proc/PID/stat).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: utime and
	// stime are the 12th and 13th of them, in clock ticks (100 a second
	// on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// selfCPU is this process's CPU time so far: the engine's, as the
// benchmark's Manager runs in it.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
