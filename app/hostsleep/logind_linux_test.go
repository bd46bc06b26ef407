package hostsleep

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"sandbar/app/desktop/desktoptest"
)

// fakeLogind is logind's Inhibit on a private bus: each call gets the
// write end of a new pipe, whose read end the test keeps to see when the
// caller lets go of its lock (the read sees EOF).
type fakeLogind struct {
	mu    sync.Mutex
	locks []*os.File // read ends, in the order of the calls
	sent  []int      // write ends' fds, closed by the test once passed
}

func (l *fakeLogind) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	if what != "sleep" || mode != "delay" {
		return 0, dbus.MakeFailedError(errors.New("want a delay lock on sleep, got " + mode + " on " + what))
	}
	var p [2]int // non-blocking, so that the read end takes a deadline
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	l.mu.Lock()
	l.locks = append(l.locks, os.NewFile(uintptr(p[0]), "lock"))
	l.sent = append(l.sent, p[1])
	l.mu.Unlock()
	return dbus.UnixFD(p[1]), nil
}

// lock returns the read end of the i-th lock, once the caller has it: a
// test calls it after the watcher took it (Start returned, or Woke
// was called).
func (l *fakeLogind) lock(t *testing.T, i int) *os.File {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		if len(l.locks) > i {
			r, w := l.locks[i], l.sent[i]
			l.mu.Unlock()
			// The caller holds its own copy by now: the test's copy
			// of the write end must not keep the pipe open.
			syscall.Close(w)
			return r
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no inhibitor lock #%d was asked for within 10 s", i+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// held reports whether the lock whose read end is r is still held: a
// read sees no EOF within a moment.
func held(r *os.File) bool {
	r.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := r.Read(make([]byte, 1))
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// released waits for the lock to be let go of (EOF), up to 10 s.
func released(r *os.File) bool {
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := r.Read(make([]byte, 1))
	return err == io.EOF
}

// TestLogindSleep: on a private bus where the test is logind, a watcher
// takes a delay lock on sleep; PrepareForSleep(true) calls Sleeping while
// the lock is held and lets go of it once Sleeping returns;
// PrepareForSleep(false) takes a new lock and calls Woke. A signal from
// another sender, or of another shape, calls nothing. Without a system
// bus Start says so.
func TestLogindSleep(t *testing.T) {
	addr := desktoptest.Bus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
	logind, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer logind.Close()
	fake := &fakeLogind{}
	if err := logind.Export(fake, logindPath, logindIface); err != nil {
		t.Fatal(err)
	}
	if reply, err := logind.RequestName(logindName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", logindName, reply, err)
	}

	sleeping := make(chan struct{})
	letSleep := make(chan struct{})
	woke := make(chan struct{}, 1)
	w, err := Start(context.Background(), Handler{
		Sleeping: func(context.Context) { sleeping <- struct{}{}; <-letSleep },
		Woke:     func(context.Context) { woke <- struct{}{} },
	}, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer w.Close()
	first := fake.lock(t, 0)
	if !held(first) {
		t.Fatal("the inhibitor lock was let go of before any sleep")
	}

	// Not logind: another connection emits the same signal.
	other, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Emit(logindPath, logindIface+".PrepareForSleep", true); err != nil {
		t.Fatal(err)
	}
	// Logind, but not a PrepareForSleep of the right shape.
	if err := logind.Emit(logindPath, logindIface+".PrepareForSleep", "yes"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sleeping:
		t.Fatal("Sleeping was called for a signal that is not logind's PrepareForSleep(true)")
	case <-time.After(500 * time.Millisecond):
	}

	if err := logind.Emit(logindPath, logindIface+".PrepareForSleep", true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sleeping:
	case <-time.After(10 * time.Second):
		t.Fatal("PrepareForSleep(true) did not call Sleeping within 10 s")
	}
	if !held(first) {
		t.Fatal("the inhibitor lock was let go of while Sleeping ran: the host would sleep before the sessions are saved")
	}
	close(letSleep)
	if !released(first) {
		t.Fatal("the inhibitor lock was kept after Sleeping returned: the host's sleep would wait its whole delay")
	}

	if err := logind.Emit(logindPath, logindIface+".PrepareForSleep", false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woke:
	case <-time.After(10 * time.Second):
		t.Fatal("PrepareForSleep(false) did not call Woke within 10 s")
	}
	second := fake.lock(t, 1)
	if !held(second) {
		t.Fatal("no new inhibitor lock held after the wake")
	}
	w.Close()
	if !released(second) {
		t.Fatal("Close kept the inhibitor lock")
	}

	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+t.TempDir()+"/none")
	if _, err := Start(context.Background(), Handler{}, nil); !errors.Is(err, ErrNoSignal) {
		t.Fatalf("Start with no system bus: %v, want ErrNoSignal", err)
	}
}
