// Package ui is Sandbar's windows and tray menu, in Fyne: the main
// window, the session windows, Settings, the first-run checklist, the
// tray and notifications. It drives a session.Service (the engine's own
// Manager, or the engine client in a second process), shows doctor's
// checks, and asks the one image builder for the guest image, all handed
// in by main. Its own widgets are in app/ui/widget.
//
// It is not a back end: it never reaches into a VM, runs no git, reads
// or walks no session's files, builds no image itself and speaks no guest
// protocol (it imports none of app/cli, app/sandbox or guest/*). It must
// not import fyne.io/fyne/v2/app: main makes the app and hands it in, so
// the tests run headless with Fyne's test driver (fyne.io/fyne/v2/test).
package ui
