// Package widget holds Sandbar's own Fyne widgets: a live log view
// (LogView), a gauge with a sparkline (Gauge, Sparkline) and a
// transcript view (TranscriptView). Each takes plain data (LogLine,
// Entry, numbers) and draws it.
//
// It is not the app: it imports no store, session or backend, opens no
// window and knows nothing of sessions' files. app/ui composes these
// widgets into windows and feeds them, as fyne-io/terminal's cmd/fyneterm
// does with its internal/widget.
package widget
