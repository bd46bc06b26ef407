package ociimage

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BenchmarkPullVsCurlTar pulls and converts a generated image from a
// real registry on loopback, and compares it with downloading the same
// blobs with curl and unpacking them with tar, in one run. The image is
// SANDBAR_BENCH_OCI_MB megabytes unpacked (default 256), in 4 layers of
// files from 1 KiB to 256 KiB, half text and half random bytes. It
// reports the ratio (target ≤ 1.5), the pull's MB/s and its peak Go heap,
// which shows the pull streams.
func BenchmarkPullVsCurlTar(b *testing.B) {
	mb := 256
	if v := os.Getenv("SANDBAR_BENCH_OCI_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 {
			b.Fatalf("SANDBAR_BENCH_OCI_MB=%q: want a number of megabytes, at least 4", v)
		}
		mb = n
	}
	curl := needTool(b, "curl", "curl")
	tarBin := needTool(b, "tar", "tar")
	reg := startRegistry(b, "", "")
	b.Setenv("DOCKER_CONFIG", b.TempDir())

	const nLayers = 4
	gen := b.TempDir()
	var layers []v1.Layer
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range nLayers {
		p := filepath.Join(gen, fmt.Sprintf("layer%d.tar.gz", i))
		writeBenchLayer(b, p, int64(mb)<<20/nLayers, i, rng)
		l, err := tarball.LayerFromFile(p)
		if err != nil {
			b.Fatal(err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		b.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	img, _ = mutate.ConfigFile(img, cf)
	ref := reg.Push(b, "bench/image:1", img)
	m, _ := img.Manifest()
	var compressed int64
	for _, l := range m.Layers {
		compressed += l.Size
	}

	var pullTime, baseTime time.Duration
	var peak atomic.Uint64
	b.ResetTimer()
	for range b.N {
		// curl + tar: each blob downloaded, then unpacked in order.
		dir := b.TempDir()
		start := time.Now()
		for i, l := range m.Layers {
			blob := filepath.Join(dir, fmt.Sprintf("blob%d", i))
			u := fmt.Sprintf("http://%s/v2/bench/image/blobs/%s", reg.Host, l.Digest)
			if out, err := exec.Command(curl, "-sSf", "-o", blob, u).CombinedOutput(); err != nil {
				b.Fatalf("curl %s: %v: %s", u, err, out)
			}
		}
		root := filepath.Join(dir, "root")
		os.Mkdir(root, 0o755)
		for i := range m.Layers {
			if out, err := exec.Command(tarBin, "-xzf", filepath.Join(dir, fmt.Sprintf("blob%d", i)), "-C", root).CombinedOutput(); err != nil {
				b.Fatalf("tar: %v: %s", err, out)
			}
		}
		baseTime += time.Since(start)
		os.RemoveAll(dir)

		s := &Store{Dir: b.TempDir()}
		stop := sampleHeap(&peak)
		start = time.Now()
		got, err := s.Pull(context.Background(), ref, registryOnly(PullOptions{}))
		pullTime += time.Since(start)
		stop()
		if err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(s.Dir)
		_ = got
	}
	b.StopTimer()
	b.ReportMetric(pullTime.Seconds()/baseTime.Seconds(), "pull/curl+tar")
	b.ReportMetric(float64(mb)*float64(b.N)/pullTime.Seconds(), "pull-MB/s")
	b.ReportMetric(float64(compressed)/(1<<20), "compressed-MB")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
}

// sampleHeap records the largest in-use heap until stop is called.
func sampleHeap(peak *atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// writeBenchLayer writes a gzip layer of about size bytes of files.
func writeBenchLayer(b *testing.B, p string, size int64, n int, rng *rand.Rand) {
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	zw := gzip.NewWriter(bw)
	tw := tar.NewWriter(zw)
	words := []string{"func", "return", "error", "package", "import", "string", "the", "of", "lib", "x86_64", "linux", "0x7f", "{", "}", "\n", "\t"}
	buf := make([]byte, 256<<10)
	dir := fmt.Sprintf("layer%d/", n)
	tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755})
	for i, written := 0, int64(0); written < size; i++ {
		sz := 1<<10 + rng.IntN(255<<10)
		data := buf[:sz]
		if i%2 == 0 {
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
		} else {
			k := 0
			for k < sz {
				k += copy(data[k:], words[rng.IntN(len(words))])
			}
		}
		name := fmt.Sprintf("%sd%03d/f%05d", dir, i/100, i)
		if i%100 == 0 {
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%sd%03d/", dir, i/100), Typeflag: tar.TypeDir, Mode: 0o755})
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(sz)}); err != nil {
			b.Fatal(err)
		}
		tw.Write(data)
		written += int64(sz)
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	zw.Close()
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
}
