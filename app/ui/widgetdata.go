package ui

import (
	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// The widgets take plain data of their own (app/ui/widget imports no
// store or session); these turn the backend's into it.

// logLines is the store's log lines as a LogView takes them.
func logLines(ls ...store.LogLine) []sbwidget.LogLine {
	out := make([]sbwidget.LogLine, len(ls))
	for i, l := range ls {
		out[i] = sbwidget.LogLine{Seq: l.Seq, Stream: l.Stream, Time: l.Time, Text: l.Text}
	}
	return out
}

// transcriptEntry is a transcript entry as a TranscriptView takes it.
func transcriptEntry(e session.Entry) sbwidget.Entry {
	w := sbwidget.Entry{Kind: sbwidget.EntryKind(e.Kind), Time: e.Time, Text: e.Text, Tool: e.Tool, ToolID: e.ToolID,
		Input: e.Input, IsError: e.IsError, CostUSD: e.CostUSD, Duration: e.Duration, Turns: e.Turns}
	if e.Kind == session.EntryResult && e.IsError {
		w.Problem = session.FailureReason(e)
	}
	return w
}

func transcriptEntries(es []session.Entry) []sbwidget.Entry {
	out := make([]sbwidget.Entry, len(es))
	for i, e := range es {
		out[i] = transcriptEntry(e)
	}
	return out
}
