//go:build linux

package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sandbar/app/config"
	"sandbar/app/session"
	"sandbar/guest/image"
	"sandbar/guest/image/download"
)

// BenchmarkImageRoot: Start → agent started (boot, ready, agent spawn;
// the clone is the same either way and left out) of a session on another
// image's root (a Debian root of the Essential packages, without git)
// against one on Sandbar's own, alternated in one run, and their ratio
// per pair. The image's root costs a second read-only disk, five bind
// mounts and the agent's account chosen from the image's users.
func BenchmarkImageRoot(b *testing.B) {
	e := setup(b)
	root := b.TempDir()
	paths, err := config.Resolve(os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	ext4 := filepath.Join(root, "debian.ext4")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err = image.BuildRoot(ctx, image.RootOptions{Downloads: &download.Cache{Dir: paths.Downloads}, Essential: true, Without: []string{"git"}}, ext4)
	cancel()
	if err != nil {
		b.Fatalf("build the image's root: %v", err)
	}
	repo := emptyRepo(b, root)
	m, _ := e.manager(b, root)
	own := &series{Metric: "boot + agent start, Sandbar's own root (2 vCPU, 2 GiB)", Key: "root-own", Unit: "ms"}
	img := &series{Metric: "boot + agent start, an image's root (Debian, no git)", Key: "root-image", Unit: "ms"}
	ratio := &series{Metric: "image's root / own root (same run, pairs)", Key: "root-ratio", Unit: "x"}
	start := func(ri *session.RootImage) float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s, err := m.Start(ctx, session.Options{Repo: repo, CPUs: 2, MemoryMiB: 2048, DiskGiB: 1, NoNetwork: true,
			Agent: session.AgentSpec{Command: "true"}, Root: ri})
		if err != nil {
			b.Fatal(err)
		}
		s, err = m.Wait(ctx, s.ID)
		if err != nil || s.State != session.StateStopped {
			b.Fatalf("session %s: %v %s %q", s.ID, err, s.State, s.Reason)
		}
		var sum time.Duration
		for _, k := range []string{"boot", "ready", "agent"} {
			d, ok := s.Timings[k]
			if !ok {
				b.Fatalf("no %s timing: %v", k, s.Timings)
			}
			sum += d
		}
		m.Remove(context.Background(), s.ID, true)
		return ms(sum)
	}
	for range e.runs {
		a := start(nil)
		c := start(&session.RootImage{Path: ext4, Name: "bench/debian"})
		own.add(a)
		img.add(c)
		ratio.add(c / a)
	}
	e.report(b, own, img, ratio)
}
