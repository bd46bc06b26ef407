//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/app/session"
)

// hugoLike makes a repository shaped like gohugoio/hugo (2,547 files in
// about 300 folders, ~10 MB of text) under root, committed once.
func hugoLike(b *testing.B, root string) string {
	b.Helper()
	repo := filepath.Join(root, "hugo-like")
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("func return if else for range package import type struct interface map string int error nil true false var const go defer select case switch")
	for i := range 2547 {
		dir := filepath.Join(repo, fmt.Sprintf("pkg%02d", i%30), fmt.Sprintf("sub%02d", (i/30)%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		for buf.Len() < 1000+rng.IntN(6000) {
			buf.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(8) == 0 {
				buf.WriteByte('\n')
			} else {
				buf.WriteByte(' ')
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%04d.go", i)), buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-q", "-m", "hugo-like"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// statusScript times `git status` in the session's clone (/workspace: the
// base disk under the session's layer) and in a copy of it on the same
// VM's scratch disk, each after one run that refreshes the index.
const statusScript = `set -e
n=$1
t() { s=$(date +%s%N); git status --porcelain >/dev/null; e=$(date +%s%N); echo "$1 $(( (e - s) / 1000 ))"; }
cd /workspace
git status >/dev/null
i=0; while [ $i -lt $n ]; do t workspace; i=$((i+1)); done
rm -rf /var/tmp/copy; cp -a /workspace /var/tmp/copy; cd /var/tmp/copy
git status >/dev/null
i=0; while [ $i -lt $n ]; do t scratch; i=$((i+1)); done
rm -rf /var/tmp/copy
`

// BenchmarkSessionWorkspace: on a hugo-sized repository, in one running
// session (2 vCPU, 2 GiB): git status on the in-VM workspace against the
// same VM's scratch disk (target ≤ 1.2×), save + merge of a session with
// one new commit (target ≤ 1 s), and the disk a new session costs (its
// overlay; the base disk is the project's, shared by its sessions).
func BenchmarkSessionWorkspace(b *testing.B) {
	e := setup(b)
	root := b.TempDir()
	repo := hugoLike(b, root)
	m, paths := e.manager(b, root)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	first := time.Now()
	s, err := m.Start(ctx, session.Options{Repo: repo, CPUs: 2, MemoryMiB: 2048, DiskGiB: 4, NoNetwork: true,
		Agent: session.AgentSpec{Command: "sleep", Args: []string{"3600"}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := waitRunning(ctx, m, s.ID); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("first session on the repository (base disk built): running after %s\n", time.Since(first).Round(time.Millisecond))

	// Disk: what the new session wrote of its own.
	overlay := allocated(filepath.Join(paths.Session(s.ID), sandbox.ScratchFile))
	var baseSize int64
	if bases, _ := filepath.Glob(filepath.Join(paths.ProjectBases(s.ProjectID), "*.ext4")); len(bases) == 1 {
		if fi, err := os.Stat(bases[0]); err == nil {
			baseSize = fi.Size()
		}
	}

	var out bytes.Buffer
	res, err := m.Exec(ctx, s.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", statusScript, "status", strconv.Itoa(e.runs)}, Timeout: 10 * time.Minute}, &out, &out)
	if err != nil || res.Code != 0 {
		b.Fatalf("status script: %v %+v\n%s", err, res, out.String())
	}
	ws := &series{Metric: "git status, hugo-sized, session workspace", Key: "status-workspace", Unit: "ms"}
	sc := &series{Metric: "git status, hugo-sized, same VM's scratch disk", Key: "status-scratch", Unit: "ms"}
	sca := bufio.NewScanner(&out)
	for sca.Scan() {
		f := strings.Fields(sca.Text())
		if len(f) != 2 {
			continue
		}
		us, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "workspace":
			ws.add(us / 1000)
		case "scratch":
			sc.add(us / 1000)
		}
	}
	if len(ws.vals) == 0 || len(sc.vals) == 0 {
		b.Fatalf("no timings in:\n%s", out.String())
	}

	merge := &series{Metric: "save + merge, one new commit", Key: "save-merge", Unit: "ms"}
	save := &series{Metric: "  of which save (pack in the VM, checked into Sandbar's repository)", Key: "save", Unit: "ms"}
	for i := range e.runs {
		var o bytes.Buffer
		res, err := m.Exec(ctx, s.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c",
			fmt.Sprintf(`echo %d >> pkg00/sub00/file0000.go && git -c user.name=A -c user.email=a@b commit -qam "change %d"`, i, i)}}, &o, &o)
		if err != nil || res.Code != 0 {
			b.Fatalf("commit: %v %+v\n%s", err, res, o.String())
		}
		start := time.Now()
		if _, err := m.Merge(ctx, s.ID, session.MergeOptions{}); err != nil {
			b.Fatal(err)
		}
		merge.add(ms(time.Since(start)))
		if got, err := m.Get(ctx, s.ID); err == nil {
			save.add(ms(got.Timings["save"]))
		}
	}
	m.Stop(ctx, s.ID)
	m.Remove(ctx, s.ID, true)

	wsM, scM := median(ws.vals), median(sc.vals)
	fmt.Printf("git status ratio workspace/scratch: %.2f (median %.1f ms vs %.1f ms)\n", wsM/scM, wsM, scM)
	fmt.Printf("disk of a new session: overlay %.1f MiB allocated; the project's base disk %.1f MiB, shared\n", float64(overlay)/(1<<20), float64(baseSize)/(1<<20))
	b.ReportMetric(wsM/scM, "status-ratio")
	b.ReportMetric(float64(overlay)/(1<<20), "overlay-MiB")
	b.ReportMetric(float64(baseSize)/(1<<20), "base-MiB")
	e.report(b, ws, sc, merge, save)
}

// allocated is the disk space a sparse file takes.
func allocated(p string) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return -1
	}
	return st.Blocks * 512
}

func median(vs []float64) float64 { return summarize(vs).Median }

// waitRunning waits for the session's agent to have started.
func waitRunning(ctx context.Context, m *session.Manager, id string) error {
	events := m.Subscribe(ctx, id)
	for {
		s, err := m.Get(ctx, id)
		if err != nil {
			return err
		}
		switch s.State {
		case session.StateRunning:
			return nil
		case session.StateFailed, session.StateStopped:
			return fmt.Errorf("session %s %s: %s", id, s.State, s.Reason)
		}
		select {
		case <-events:
		case <-ctx.Done():
			return fmt.Errorf("session %s did not start running: %w", id, ctx.Err())
		}
	}
}

// genFiles writes n files of 1 KB under dir in the session's clone, in
// one process (so the figure is the save's, not the writing's).
const genFiles = `import os, sys
n, top = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    d = "%s/d%03d" % (top, i // 1000)
    if i % 1000 == 0:
        os.makedirs(d, exist_ok=True)
    with open("%s/f%06d.txt" % (d, i), "w") as f:
        f.write(("file %d " % i).ljust(1023, "x") + "\n")
`

// BenchmarkSaveManyFiles: the save of 1,000, 10,000 and 100,000 changed
// files (1 KB each, uncommitted) in one running session (2 vCPU, 2 GiB):
// the snapshot of the working tree, packed in the VM and checked into
// Sandbar's repository. Targets under emulation: 10,000 in ≤ 15 s,
// 100,000 in ≤ 2 min. Each size is saved from a tree where only its
// files changed.
func BenchmarkSaveManyFiles(b *testing.B) {
	e := setup(b)
	root := b.TempDir()
	repo := hugoLike(b, root)
	// The engine's line for each save says where its time went (phases
	// in the VM, the host's import): printed beside the figures.
	m, _ := e.manager(b, root, func(c *session.Config) {
		c.Logger = slog.New(onlyMessage{"work saved", slog.NewTextHandler(os.Stdout, nil)})
	})
	sizes := []struct {
		n    int
		runs int
	}{{1000, e.runs}, {10000, max(1, e.runs/3)}, {100000, 1}}
	// SANDBAR_BENCH_SAVE_SIZES=100000 (a list, by commas) runs only those.
	if v := os.Getenv("SANDBAR_BENCH_SAVE_SIZES"); v != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("SANDBAR_BENCH_SAVE_SIZES=%q: give numbers of files, by commas", v)
			}
			sizes = append(sizes, struct {
				n    int
				runs int
			}{n, max(1, e.runs*1000/n)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	s, err := m.Start(ctx, session.Options{Repo: repo, CPUs: 2, MemoryMiB: 2048, DiskGiB: 6, NoNetwork: true,
		Agent: session.AgentSpec{Command: "sleep", Args: []string{"36000"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Remove(context.Background(), s.ID, true)
	if err := waitRunning(ctx, m, s.ID); err != nil {
		b.Fatal(err)
	}
	var all []*series
	for _, size := range sizes {
		sr := &series{Metric: fmt.Sprintf("save of %d changed files (1 KB each)", size.n), Key: fmt.Sprintf("save-%d", size.n), Unit: "ms"}
		for i := range size.runs {
			dir := fmt.Sprintf("gen-%d-%d", size.n, i)
			var o bytes.Buffer
			res, err := m.Exec(ctx, s.ID, sandbox.ExecRequest{Argv: []string{"python3", "-c", genFiles, strconv.Itoa(size.n), dir}, Timeout: 30 * time.Minute}, &o, &o)
			if err != nil || res.Code != 0 {
				b.Fatalf("make %d files: %v %+v\n%s", size.n, err, res, o.String())
			}
			// Commit now saves the running session's work (its
			// "save" timing) and commits it on the branch.
			if _, err := m.Commit(ctx, s.ID, fmt.Sprintf("bench: %d files", size.n)); err != nil {
				b.Fatalf("save of %d files: %v", size.n, err)
			}
			got, err := m.Get(ctx, s.ID)
			if err != nil {
				b.Fatal(err)
			}
			sr.add(ms(got.Timings["save"]))
			// Back to the tree before: the next size's save sees only its
			// own files (the commit stays in Sandbar's saves).
			res, err = m.Exec(ctx, s.ID, sandbox.ExecRequest{Argv: []string{"git", "reset", "-q", "--hard", "HEAD~1"}, Timeout: 10 * time.Minute}, &o, &o)
			if err != nil || res.Code != 0 {
				b.Fatalf("remove the files: %v %+v\n%s", err, res, o.String())
			}
		}
		fmt.Printf("save of %d changed files: median %.0f ms\n", size.n, median(sr.vals))
		b.ReportMetric(median(sr.vals), fmt.Sprintf("save-%d-ms", size.n))
		all = append(all, sr)
	}
	m.Stop(ctx, s.ID)
	e.report(b, all...)
}

// onlyMessage passes on the records whose message is msg.
type onlyMessage struct {
	msg string
	slog.Handler
}

func (h onlyMessage) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != h.msg {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h onlyMessage) WithAttrs(as []slog.Attr) slog.Handler {
	return onlyMessage{h.msg, h.Handler.WithAttrs(as)}
}

func (h onlyMessage) WithGroup(name string) slog.Handler {
	return onlyMessage{h.msg, h.Handler.WithGroup(name)}
}
