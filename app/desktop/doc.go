// Package desktop asks the person's desktop for things only it should
// show: today, a folder, through the desktop's own chooser (the XDG
// desktop portal on Linux, NSOpenPanel on macOS), so that picking a
// repository three folders deep is the same few clicks as in every other
// app.
//
// It knows nothing of Fyne, projects or repositories: it returns a path,
// or ErrCanceled, or ErrUnavailable when the desktop has no chooser to
// offer, and the caller falls back to its own way of asking.
package desktop
