package desktop

/*
#cgo LDFLAGS: -framework AppKit
#include <stdint.h>

void sandbarAccessory(void);
int sandbarTakeTermination(uintptr_t quit);
void sandbarAllowTermination(void);
*/
import "C"

import (
	"errors"
	"runtime/cgo"

	"github.com/go-gl/glfw/v3.4/glfw"
)

// The menu-bar app on macOS, where Fyne's GLFW driver does two things a
// menu-bar app must not (both in GLFW's cocoa_init.m):
//
//   - _glfwInitCocoa makes the app a regular one, with a Dock icon and an
//     app menu, whatever the bundle's LSUIElement says, unless the
//     GLFW_COCOA_MENUBAR init hint is off;
//   - its application delegate answers every applicationShouldTerminate:
//     with NSTerminateCancel (after asking each window to close), so a
//     logout, restart or shutdown that asks Sandbar to quit is cancelled.
//
// The Objective-C half is menubar_darwin.m.

// TrayHost reports whether the desktop shows tray icons: the macOS menu
// bar always does.
func TrayHost() bool { return true }

// PrepareMenuBarApp runs before the window system starts (before Fyne
// creates a window or runs): GLFW is told not to make the app a regular
// one, so no Dock icon shows even for a moment, and the app is made an
// accessory one (LSUIElement's policy), which an unbundled binary is not
// by itself. Main thread only, which main's goroutine is.
func PrepareMenuBarApp() {
	glfw.InitHint(glfw.CocoaMenubar, glfw.False)
	C.sandbarAccessory()
}

// MenuBarApp runs once the window system is up (Fyne's OnStarted, on the
// main thread, after GLFW's init, the only place GLFW sets the activation
// policy): the app is an accessory one whatever happened before, and a
// request to terminate it (a logout, restart or shutdown; Quit in Activity
// Monitor or from a script) runs quit, which stops the sessions, on a
// goroutine, and then lets the termination go on: the process exits and
// the logout proceeds.
func MenuBarApp(quit func()) error {
	C.sandbarAccessory()
	if C.sandbarTakeTermination(C.uintptr_t(cgo.NewHandle(quit))) == 0 {
		return errors.New("the app has no delegate to answer the system's requests to quit: a logout or restart with Sandbar running may be cancelled")
	}
	return nil
}

// sandbarQuitRequested is called on the main thread by the delegate's
// applicationShouldTerminate:, which answered NSTerminateLater: AppKit then
// waits (running its loop, maybe within that call) for the reply that
// sandbarAllowTermination sends once quit has returned.
//
//export sandbarQuitRequested
func sandbarQuitRequested(h C.uintptr_t) {
	quit := cgo.Handle(h).Value().(func())
	go func() {
		quit()
		C.sandbarAllowTermination()
	}()
}
