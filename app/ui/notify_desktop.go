package ui

import "fyne.io/fyne/v2"

// desktopNotifier shows notifications through the desktop's own
// notification service, where clicking one opens its session (Fyne's
// SendNotification has no actions): the freedesktop Notifications
// service over D-Bus on Linux (notify_linux.go), the UserNotifications
// framework on macOS (notify_darwin.go). Each platform's
// newDesktopNotifier(appID, open) returns one, or an error where the
// desktop has no such service; open is called, on no particular
// goroutine, with the session of a notification the person clicked.
type desktopNotifier interface {
	Notify(n sessionNote) error
	Close() error
}

// notifyAppName is the application name notifications carry.
const notifyAppName = "Sandbar"

// desktopSend is StartNotifications' default: the desktop's notification
// service, with Fyne's notification where there is none or it fails.
func (u *UI) desktopSend(n *Notifier) func(sessionNote) {
	open := func(id string) { u.post(func() { u.openSession(id) }) }
	d, err := newDesktopNotifier(u.App.UniqueID(), open)
	if err != nil {
		fyne.LogError("notifications: clicking one will not open its session", err)
	} else {
		n.desktop = d
	}
	return func(note sessionNote) {
		if d != nil {
			err := d.Notify(note)
			if err == nil {
				return
			}
			fyne.LogError("notifications: the desktop's service refused one, sent through Fyne instead", err)
		}
		fn := fyne.NewNotification(note.Title, note.Body)
		u.post(func() { u.App.SendNotification(fn) })
	}
}
