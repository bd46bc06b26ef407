package supervisor

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(r, pipeSize)
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	rc.Control(func(fd uintptr) { size, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
	if err != nil {
		t.Fatal(err)
	}
	if max, _ := os.ReadFile("/proc/sys/fs/pipe-max-size"); size < pipeSize && os.Geteuid() == 0 {
		t.Fatalf("pipe holds %d bytes after growPipe(%d) (pipe-max-size %s)", size, pipeSize, max)
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f, pipeSize) // not a pipe: nothing happens, nothing breaks
}
