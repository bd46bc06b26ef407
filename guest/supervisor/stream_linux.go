package supervisor

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe asks for a pipe buffer of size bytes on f, if f is a pipe;
// failing that, the pipe keeps its size.
func growPipe(f *os.File, size int) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size)
	})
}
