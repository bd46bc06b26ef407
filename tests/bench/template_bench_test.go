//go:build linux

package bench

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/guest/image"
	"sandbar/vm"
)

// BenchmarkTemplate saves a template of the image (timed), then starts
// VMs of a session's default shape (2 vCPUs, 2 GiB, a scratch disk, a
// workspace disk, a NIC) alternately cold and from the template, each
// timed from its start to the guest's system:ready, with the ratio of
// each pair (same load) and the settled RSS of each kind of QEMU.
func BenchmarkTemplate(b *testing.B) {
	e := setup(b)
	root := b.TempDir()
	tdir := filepath.Join(root, "template")
	save := &series{Metric: "save the image's template (boot to the wait point, save)", Key: "template-save", Unit: "ms"}
	cold := &series{Metric: "cold boot → system:ready, 2 vCPU, 2 GiB, session shape", Key: "cold", Unit: "ms"}
	warm := &series{Metric: "start from the template → system:ready, same shape", Key: "from-template", Unit: "ms"}
	ratio := &series{Metric: "from the template / cold boot (target ≤ 0.15×)", Key: "template-per-cold", Unit: "x"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	if err := sandbox.SaveTemplate(ctx, e.hv, e.img, tdir); err != nil {
		b.Fatalf("save the template: %v", err)
	}
	save.add(ms(time.Since(start)))
	ws := filepath.Join(root, "workspace.ext4")
	if err := image.TarToExt4(ws, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		if err := tw.WriteHeader(&tar.Header{Name: "repo/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Now()}); err != nil {
			return err
		}
		return tw.Close()
	}); err != nil {
		b.Fatal(err)
	}
	boot := func(name string, template string) time.Duration {
		b.Helper()
		dir := filepath.Join(root, name)
		host, guest, _, err := sandbox.NICPair(e.hv)
		if err != nil {
			b.Fatal(err)
		}
		defer host.Close()
		defer guest.Close()
		sb, err := sandbox.Boot(ctx, e.hv, e.img, sandbox.Options{
			Dir: dir, CPUs: sandbox.DefaultCPUs, Memory: memory, ScratchSize: 1 << 30, Workspace: ws, Template: template,
			NIC:    &vm.NIC{File: guest, MAC: []byte{0x02, 0, 0, 0, 0, 2}, MTU: 1500},
			NICArg: "static:10.0.2.15/24,10.0.2.2,10.0.2.3",
		})
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		if template != "" && !sb.FromTemplate {
			b.Fatalf("%s did not start from the template: %s", name, sb.TemplateNote)
		}
		sb.Shutdown(ctx)
		os.RemoveAll(dir)
		return sb.ReadyAfter
	}
	for i := range e.runs {
		c := boot(fmt.Sprintf("cold%d", i), "")
		w := boot(fmt.Sprintf("warm%d", i), tdir)
		cold.add(ms(c))
		warm.add(ms(w))
		ratio.add(float64(w) / float64(c))
		b.Logf("[%s] run %d: cold %s, from the template %s (%.2f×)", e.accel, i+1, c.Round(time.Millisecond), w.Round(time.Millisecond), float64(w)/float64(c))
	}
	e.report(b, save, cold, warm, ratio)
}
