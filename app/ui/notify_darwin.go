//go:build darwin

package ui

/*
#cgo LDFLAGS: -framework Foundation -framework UserNotifications
#include <stdint.h>
#include <stdlib.h>

int sandbarNotifyStart(uintptr_t handle);
void sandbarNotify(const char *ident, const char *session, const char *title, const char *body);
void sandbarNotifyStop(void);
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"sync/atomic"
	"unsafe"
)

// macNotifier sends notifications through the UserNotifications
// framework (UNUserNotificationCenter), in a "session" category with an
// Open action; its delegate opens the session of a notification the
// person clicks or opens. The Objective-C half is notify_darwin.m.
//
// Written against Apple's API and type-checked by the darwin check; it
// has not been run on a Mac. UNUserNotificationCenter works only in a
// bundled app (Sandbar.app): a bare binary has no bundle identifier, and
// then this returns an error and Fyne's notifications are used instead.
type macNotifier struct {
	handle cgo.Handle
	seq    atomic.Uint64
}

// newDesktopNotifier sets up the notification center's delegate and the
// session category, asking the person's permission the first time.
func newDesktopNotifier(_ string, open func(session string)) (desktopNotifier, error) {
	h := cgo.NewHandle(open)
	if C.sandbarNotifyStart(C.uintptr_t(h)) == 0 {
		h.Delete()
		return nil, errors.New("the notification center needs Sandbar to run as Sandbar.app (no bundle identifier)")
	}
	return &macNotifier{handle: h}, nil
}

// Notify implements desktopNotifier; the center delivers it on its own.
func (m *macNotifier) Notify(n sessionNote) error {
	ident := C.CString(fmt.Sprintf("sandbar-%s-%d", n.Session, m.seq.Add(1)))
	sess, title, body := C.CString(n.Session), C.CString(n.Title), C.CString(n.Body)
	defer func() {
		for _, p := range []*C.char{ident, sess, title, body} {
			C.free(unsafe.Pointer(p))
		}
	}()
	C.sandbarNotify(ident, sess, title, body)
	return nil
}

// Close implements desktopNotifier: the delegate lets go of the
// callback first, so no click reaches a deleted handle.
func (m *macNotifier) Close() error {
	C.sandbarNotifyStop()
	m.handle.Delete()
	return nil
}

//export sandbarNotificationOpened
func sandbarNotificationOpened(h C.uintptr_t, session *C.char) {
	if h == 0 {
		return
	}
	if open, ok := cgo.Handle(h).Value().(func(string)); ok {
		open(C.GoString(session))
	}
}
