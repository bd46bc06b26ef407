// Package terminal is the terminal widget of fyne-io/terminal (BSD-3,
// see LICENSE), copied at upstream commit b58db86 because the module
// proxy does not serve that module; the session window's Terminal tab
// shows a shell in a session's VM with it.
//
// It is not a terminal of the host: what it shows comes from a coding
// agent's VM and is hostile. So, against upstream:
//   - there is no local shell (RunLocalShell, creack/pty, the Windows
//     ConPTY): RunWithConnection is the only way in, and OnResize tells
//     the caller the size to give its PTY;
//   - OSC and APC sequences are read and dropped: no title (OSC 0, 2),
//     no os.Chdir of the host process (OSC 7), no handlers registered
//     in a package-level map; printer mode (CSI 5 i) is ignored;
//   - an escape sequence's text is bounded (maxCodeLen), the numbers of
//     the sequences that count cells are clamped to the screen, the
//     scroll region stays inside it, rows do not grow past its width,
//     and a panic in a handler drops the sequence instead of ending the
//     app;
//   - the output is handled on the UI goroutine (Post), a read at a
//     time, in order, and reading ends at the pipe's first error.
//
// hostile_test.go holds each of these; the other tests are upstream's,
// two of them changed where a bound changes what is drawn.
package terminal
