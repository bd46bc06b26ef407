package hostsleep

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/godbus/dbus/v5"
)

// logind's names on the system bus.
const (
	logindName  = "org.freedesktop.login1"
	logindPath  = dbus.ObjectPath("/org/freedesktop/login1")
	logindIface = "org.freedesktop.login1.Manager"
)

// Watch watches the host's sleep until Close.
type Watch struct {
	conn   *dbus.Conn
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start calls h around each of the host's sleeps until Close: on
// Linux it hears logind's PrepareForSleep signal on the system bus
// (godbus finds the bus as DBUS_SYSTEM_BUS_ADDRESS says, or at its
// standard place). It holds a "delay" inhibitor lock of logind's, so the
// sleep waits for h.Sleeping (up to logind's InhibitDelayMaxSec), gives
// it back once Sleeping returns, and takes a new one at the wake. Without
// a lock (logind refused one) it watches all the same: what Sleeping has
// not finished when the host sleeps finishes at the wake, before Woke.
// Without a system bus it returns ErrNoSignal.
func Start(ctx context.Context, h Handler, log *slog.Logger) (*Watch, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("%w: the system bus: %v", ErrNoSignal, err)
	}
	err = conn.AddMatchSignal(dbus.WithMatchSender(logindName), dbus.WithMatchObjectPath(logindPath),
		dbus.WithMatchInterface(logindIface), dbus.WithMatchMember("PrepareForSleep"))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: listen for logind's PrepareForSleep: %v", ErrNoSignal, err)
	}
	signals := make(chan *dbus.Signal, 16)
	conn.Signal(signals)
	ctx, cancel := context.WithCancel(ctx)
	w := &Watch{conn: conn, cancel: cancel, done: make(chan struct{})}
	lock := w.inhibit(ctx, log)
	go func() {
		defer close(w.done)
		defer func() {
			if lock != nil {
				lock.Close()
			}
		}()
		for {
			var sig *dbus.Signal
			select {
			case <-ctx.Done():
				return
			case sig = <-signals:
			}
			sleeping, ok := prepareForSleep(sig)
			if !ok {
				continue
			}
			if sleeping {
				log.Info("the host is going to sleep")
				if h.Sleeping != nil {
					h.Sleeping(ctx)
				}
				// The sleep may go on now.
				if lock != nil {
					lock.Close()
					lock = nil
				}
				continue
			}
			log.Info("the host woke")
			if lock == nil {
				lock = w.inhibit(ctx, log)
			}
			if h.Woke != nil {
				h.Woke(ctx)
			}
		}
	}()
	return w, nil
}

// prepareForSleep reads a PrepareForSleep signal: whether the host is
// going to sleep (true) or woke (false), and whether sig is one.
func prepareForSleep(sig *dbus.Signal) (sleeping, ok bool) {
	if sig == nil || sig.Name != logindIface+".PrepareForSleep" || sig.Path != logindPath || len(sig.Body) != 1 {
		return false, false
	}
	sleeping, ok = sig.Body[0].(bool)
	return sleeping, ok
}

// inhibit takes a delay lock on the host's sleep: a file whose closing
// lets the sleep go on; nil when logind gives none.
func (w *Watch) inhibit(ctx context.Context, log *slog.Logger) *os.File {
	var fd dbus.UnixFD
	err := w.conn.Object(logindName, logindPath).CallWithContext(ctx, logindIface+".Inhibit", 0,
		"sleep", "Sandbar", "Saving the running sessions to disk", "delay").Store(&fd)
	if err != nil {
		log.Info("no delay lock on the host's sleep: sessions are saved as the host sleeps or wakes", "err", err)
		return nil
	}
	return os.NewFile(uintptr(fd), "logind sleep inhibitor")
}

// Close stops watching and waits for a handler that runs to return.
func (w *Watch) Close() {
	w.once.Do(func() {
		w.cancel()
		<-w.done
		w.conn.Close()
	})
}
