// Package desktop is the glue between Sandbar and the person's desktop,
// the parts only the desktop can answer or decide:
//
//   - a folder, through the desktop's own chooser (the XDG desktop portal
//     on Linux, NSOpenPanel on macOS), so that picking a repository three
//     folders deep is the same few clicks as in every other app;
//   - whether the desktop shows tray icons at all (TrayHost);
//   - the screen's work area, for windows to open no bigger (ScreenSize);
//   - the menu-bar app's place on macOS: no Dock icon, and a logout or
//     shutdown that stops the sessions instead of being cancelled
//     (PrepareMenuBarApp, MenuBarApp).
//
// Each has the same exported shape on every system, so main wires it
// without build tags. The chooser knows nothing of Fyne, projects or
// repositories: it returns a path, or ErrCanceled, or ErrUnavailable when
// the desktop has no chooser to offer, and the caller falls back to its
// own way of asking. The screen and the menu bar go through GLFW, which
// Fyne's desktop driver starts; this package neither starts it nor opens
// a window.
package desktop
