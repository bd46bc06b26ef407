package qemu

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestConnectVsockLoopback: connectVsock retries while nobody listens,
// then carries bytes both ways and ends a waiting Read on Close. It needs
// the kernel's vsock loopback transport (CID 1); without it, it skips.
func TestConnectVsockLoopback(t *testing.T) {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no AF_VSOCK here: %v", err)
	}
	ln := os.NewFile(uintptr(fd), "vsock-listener")
	defer ln.Close()
	if err := unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_LOCAL, Port: unix.VMADDR_PORT_ANY}); err != nil {
		t.Skipf("no vsock loopback transport (vsock_loopback) here: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*unix.SockaddrVM).Port
	type result struct {
		f   *os.File
		err error
	}
	got := make(chan result, 1)
	go func() {
		f, err := connectVsock(t.Context(), unix.VMADDR_CID_LOCAL, port, nil)
		got <- result{f, err}
	}()
	time.Sleep(100 * time.Millisecond) // refused meanwhile: not listening yet
	if err := unix.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	nfd, _, err := unix.Accept(fd)
	if err != nil {
		t.Fatal(err)
	}
	guest := os.NewFile(uintptr(nfd), "guest-end")
	defer guest.Close()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	host := r.f
	guest.Write([]byte("ready\n"))
	buf := make([]byte, 6)
	if _, err := io.ReadFull(host, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	readDone := make(chan error, 1)
	go func() { _, err := host.Read(buf); readDone <- err }()
	host.Close()
	select {
	case err := <-readDone:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("a Read waiting at Close ended with %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Read")
	}
}

// TestConnectVsockGivesUp: nobody ever listens; connectVsock ends when
// QEMU does (done) or ctx does, whatever the host's vsock makes of the
// attempts.
func TestConnectVsockGivesUp(t *testing.T) {
	done := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(done) })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := connectVsock(ctx, 3+uint32(time.Now().UnixNano()%1000), 1024, done)
	if err == nil {
		t.Fatal("connected to a guest that does not exist")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("giving up took %s", took)
	}
	if !strings.Contains(err.Error(), "qemu exited") && !strings.Contains(err.Error(), "vsock") {
		t.Errorf("err = %v", err)
	}
	t.Logf("gave up after %s: %v", time.Since(start).Round(time.Millisecond), err)
}
