//go:build linux

package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// packTools are the commands bench-kvm.sh's run needs from the machine it
// runs on: a bare Linux's, with no QEMU and no Go.
var packTools = []string{
	"bash", "sh", "env", "cat", "cp", "date", "dirname", "gzip", "id", "ls",
	"mkdir", "mktemp", "nproc", "readlink", "rm", "tar", "tee", "touch", "uname",
}

// TestBenchKVMSmallPack makes the small KVM benchmark pack and runs its
// exec benchmark the way the KVM machine would: from a copy of the pack's
// directory, with a PATH that has no QEMU and no Go, so the packed QEMU,
// its libraries and firmware, the static test binary and the trimmed
// image must do it all. (This machine's trial boot decides KVM or TCG.)
func TestBenchKVMSmallPack(t *testing.T) {
	img := guestImage(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "bench-kvm.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// A path with a space: the script must quote it.
	pack := filepath.Join(t.TempDir(), "kvm pack")
	cmd := exec.Command(script, "pack", "--small", pack)
	cmd.Env = append(os.Environ(), "SANDBAR_IMAGE_DIR="+filepath.Dir(img.Dir), "GO="+goBin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pack --small: %v\n%s", err, out)
	}
	fi, err := os.Stat(filepath.Join(pack, "pack.tar.gz"))
	if err != nil {
		t.Fatalf("pack --small left no archive: %v", err)
	}
	// The lent KVM machine takes 64 MiB of carried files, the repository
	// (~2 MiB) included.
	if fi.Size() >= 60<<20 {
		t.Errorf("pack.tar.gz is %d MiB, want under 60 MiB", fi.Size()>>20)
	}
	t.Logf("small pack: %.1f MiB", float64(fi.Size())/(1<<20))

	// A bin dir with only what a bare machine has.
	bin := t.TempDir()
	for _, name := range packTools {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s is not installed here: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	run := exec.Command(filepath.Join(pack, "bench-kvm.sh"), "run", pack, "-test.bench", "^BenchmarkExec$")
	run.Env = []string{"PATH=" + bin, "HOME=" + tmp, "TMPDIR=" + tmp, "SANDBAR_BENCH_RUNS=1"}
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"small pack: trimmed disks", "QEMU emulator version", "| exec `true` round trip, 2 vCPU", "PASS"} {
		if !strings.Contains(text, want) {
			t.Errorf("run's output lacks %q:\n%s", want, text)
		}
	}
	results, _ := filepath.Glob(filepath.Join(pack, "results-*.txt"))
	if len(results) != 1 {
		t.Errorf("results files in the pack: %q, want one", results)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("run left %q in TMPDIR, want the unpacked pack removed", names)
	}
}
