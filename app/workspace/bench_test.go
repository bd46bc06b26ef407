package workspace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkProvision measures what a new session costs on the host for a
// small repository (10 files of 1 MiB, ~10 MB) and a big one (200 files of
// 5 MiB random data, ~1 GB), in one run, and the ratio: the history is
// already in Sandbar's repository and the project's base disk at that
// commit exists (another session made it), so a session is Fetch finding
// the commit, BuildBase finding the disk, and a sparse scratch file. The
// one-time cost of building each base disk is reported beside it.
//
// The big repository is made once and kept under the temporary directory
// (sandbar-bench-big-1g) for later runs; -short leaves it out.
//
//	go test -run '^$' -bench BenchmarkProvision -benchtime 10x ./app/workspace
func BenchmarkProvision(b *testing.B) {
	small := benchRepo(b, "small-10m", 10, 1<<20)
	big := ""
	if !testing.Short() {
		big = benchRepo(b, "big-1g", 200, 5<<20)
	}
	type fixture struct {
		name, root string
		data       string
		m          *Mirror
		build      time.Duration
		each       []time.Duration
	}
	var fs []*fixture
	for _, r := range []struct{ name, root string }{{"small", small}, {"big", big}} {
		if r.root == "" {
			continue
		}
		data := b.TempDir()
		f := &fixture{name: r.name, root: r.root, data: data}
		m, err := OpenMirror(context.Background(), filepath.Join(data, "repo.git"))
		if err != nil {
			b.Fatal(err)
		}
		f.m = m
		start := time.Now()
		if _, err := benchProvisionOnce(b, f.m, r.root, data); err != nil {
			b.Fatal(err)
		}
		f.build = time.Since(start)
		fs = append(fs, f)
	}
	b.ResetTimer()
	for range b.N {
		for _, f := range fs {
			d, err := benchProvisionOnce(b, f.m, f.root, f.data)
			if err != nil {
				b.Fatal(err)
			}
			f.each = append(f.each, d)
		}
	}
	b.StopTimer()
	for _, f := range fs {
		b.ReportMetric(ms(median(f.each)), f.name+"-session-ms")
		b.ReportMetric(ms(f.build), f.name+"-first-base-ms")
	}
	if len(fs) == 2 {
		ratio := ms(median(fs[1].each)) / ms(median(fs[0].each))
		b.ReportMetric(ratio, "session-ratio")
		b.Logf("new session, median of %d: 10 MB %.1f ms, 1 GB %.1f ms, ratio %.2f; first base disk: 10 MB %.0f ms, 1 GB %.0f ms",
			b.N, ms(median(fs[0].each)), ms(median(fs[1].each)), ratio, ms(fs[0].build), ms(fs[1].build))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// benchProvisionOnce does what a new session costs on the host: the
// history and the base disk, and the session's sparse scratch disk.
func benchProvisionOnce(b *testing.B, m *Mirror, root, data string) (time.Duration, error) {
	ctx := context.Background()
	src := Repo{Root: root}
	start := time.Now()
	commit, err := m.Fetch(ctx, src, "", nil)
	if err != nil {
		return 0, err
	}
	if _, err := m.BuildBase(ctx, BaseOptions{Source: src, Commit: commit, Dir: filepath.Join(data, "bases")}); err != nil {
		return 0, err
	}
	scratch := filepath.Join(data, "scratch.img")
	f, err := os.Create(scratch)
	if err != nil {
		return 0, err
	}
	err = f.Truncate(20 << 30)
	f.Close()
	took := time.Since(start)
	os.Remove(scratch)
	return took, err
}

// benchRepo makes (once, then reuses) a repository of n files of size
// random bytes under the temporary directory.
func benchRepo(b *testing.B, name string, n, size int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "sandbar-bench-"+name)
	root := filepath.Join(dir, "repo")
	done := filepath.Join(dir, "done")
	if _, err := os.Stat(done); err == nil {
		return root
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	rng := rand.New(rand.NewChaCha8([32]byte{byte(n), byte(size)}))
	buf := make([]byte, size)
	for i := range n {
		for j := 0; j < len(buf); j += 8 {
			v := rng.Uint64()
			for k := 0; k < 8 && j+k < len(buf); k++ {
				buf[j+k] = byte(v >> (8 * k))
			}
		}
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("blob-%03d.bin", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitT(b, root, "init", "-q", "-b", "main")
	// Random data does not compress; storing it is what makes the fixture
	// quick to build, and changes nothing about linking it.
	gitT(b, root, "-c", "core.compression=0", "add", "-A")
	gitT(b, root, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "blobs")
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("made %s (%d × %d bytes) in %v", root, n, size, time.Since(start).Round(time.Millisecond))
	return root
}

// BenchmarkMergeInto measures merge --into (MergeInto) of a session that
// changed 20 files of a repository of 2,000, with the checks of issue 21
// (steering files, blanked filters, the guard taken before the checkout)
// against the same merge without them (mergeInto's unguarded baseline),
// alternating in one run; the person's branch is put back between
// merges, untimed. The figure to keep is guarded/unguarded (≤ 1.1).
//
//	go test -run '^$' -bench BenchmarkMergeInto -benchtime 20x ./app/workspace
func BenchmarkMergeInto(b *testing.B) {
	ctx := context.Background()
	root := newRepo(b, "")
	for i := range 2000 {
		p := filepath.Join(root, "pkg", fmt.Sprintf("d%02d", i%40), fmt.Sprintf("f%04d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package d\n\n// file %d\nvar X%d = %d\n", i, i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitT(b, root, "add", "-A")
	gitT(b, root, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "2000 files")
	start := gitT(b, root, "rev-parse", "HEAD")
	c := sessionT(b, root, "bench1")
	for i := range 20 {
		writeFile(b, filepath.Join(c.dir, "pkg", fmt.Sprintf("d%02d", i%40), fmt.Sprintf("f%04d.go", i*97%2000)), fmt.Sprintf("package d\n\n// changed %d\n", i))
	}
	writeFile(b, filepath.Join(c.dir, "cmd", "new", "main.go"), "package main\n\nfunc main() {}\n")
	gitT(b, c.dir, "add", "-A")
	gitT(b, c.dir, "-c", "user.name=Agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", "session: 21 files")
	c.save(b)
	src := resolveT(b, root)
	var guarded, plain []time.Duration
	once := func(unguarded bool) time.Duration {
		gitT(b, root, "reset", "-q", "--hard", start)
		t0 := time.Now()
		if _, err := mergeInto(ctx, src, c.m, c.id, c.branch, true, unguarded, false); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	once(false) // warm both
	once(true)
	b.ResetTimer()
	// make bench runs each benchmark once (-benchtime 1x): a ratio of
	// medians needs a few pairs all the same.
	for i := range max(b.N, 8) {
		if i%2 == 0 {
			guarded = append(guarded, once(false))
			plain = append(plain, once(true))
		} else {
			plain = append(plain, once(true))
			guarded = append(guarded, once(false))
		}
	}
	b.StopTimer()
	ratio := ms(median(guarded)) / ms(median(plain))
	b.ReportMetric(ms(median(guarded)), "guarded-ms")
	b.ReportMetric(ms(median(plain)), "unguarded-ms")
	b.ReportMetric(ratio, "guarded/unguarded")
	b.Logf("merge --into, median of %d: with the checks %.1f ms, without %.1f ms, ratio %.2f", len(guarded), ms(median(guarded)), ms(median(plain)), ratio)
}
