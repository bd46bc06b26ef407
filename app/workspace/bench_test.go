package workspace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkClone clones a small repository (10 small files) and a big one
// (200 files of 5 MB random data, about 1 GB of blobs) in every iteration
// and reports each one's time and the ratio, in one run. "objects" is the
// git clone --local step (hardlinks: near constant); "total" adds the
// checkout, which writes every file of the base commit and so grows with
// the size of the tree, not of the history.
//
// The big repository is made once and kept under the temporary directory
// (sandbar-bench-big-1g) for later runs; -short leaves it out.
//
//	go test -run '^$' -bench BenchmarkClone -benchtime 3x ./app/workspace
func BenchmarkClone(b *testing.B) {
	small := benchRepo(b, "small", 10, 1<<10)
	big := ""
	if !testing.Short() {
		big = benchRepo(b, "big-1g", 200, 5<<20)
	}

	var smallObj, smallTotal, bigObj, bigTotal time.Duration
	b.ResetTimer()
	for range b.N {
		o, t := benchCloneOnce(b, small)
		smallObj += o
		smallTotal += t
		if big != "" {
			o, t := benchCloneOnce(b, big)
			bigObj += o
			bigTotal += t
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	b.ReportMetric(ms(smallObj), "small-objects-ms")
	b.ReportMetric(ms(smallTotal), "small-total-ms")
	if big == "" {
		b.Logf("small: objects %.1f ms, total %.1f ms (big repository skipped in -short)", ms(smallObj), ms(smallTotal))
		return
	}
	b.ReportMetric(ms(bigObj), "big-objects-ms")
	b.ReportMetric(ms(bigTotal), "big-total-ms")
	b.ReportMetric(ms(bigObj)/ms(smallObj), "objects-ratio")
	b.ReportMetric(ms(bigTotal)/ms(smallTotal), "total-ratio")
	b.Logf("small (10 files): objects %.1f ms, total %.1f ms; big (~1 GB): objects %.1f ms, total %.1f ms; ratio objects %.2f, total %.2f",
		ms(smallObj), ms(smallTotal), ms(bigObj), ms(bigTotal), ms(bigObj)/ms(smallObj), ms(bigTotal)/ms(smallTotal))
}

// benchCloneOnce clones root and returns the time to the end of the
// object step and to the end, then removes the clone off the clock.
func benchCloneOnce(b *testing.B, root string) (objects, total time.Duration) {
	dest := filepath.Join(b.TempDir(), "ws")
	src := Repo{Root: root}
	start := time.Now()
	_, err := Clone(context.Background(), CloneOptions{Source: src, Dest: dest, Branch: "sandbar/bench",
		Progress: func(p Progress) {
			if p.Phase == PhaseCheckingOut {
				objects = time.Since(start)
			}
		}})
	total = time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := os.RemoveAll(dest); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return objects, total
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
