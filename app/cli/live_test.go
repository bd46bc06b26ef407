package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
)

// TestLivePrinter: each ended line is printed once, in order, escaped;
// the header with the elapsed time comes first and every liveEvery;
// lines that scrolled past between events are counted.
func TestLivePrinter(t *testing.T) {
	var out bytes.Buffer
	p := newLivePrinter(&Env{Stdout: &out}, false)
	in := `{"command":"for i in 1 2; do echo $i; done"}`
	p.show(session.LiveOutput{PID: 7, Tool: "Bash", Input: in, Elapsed: 500 * time.Millisecond, Lines: []string{"one", "tw"}, Partial: true, Total: 1})
	p.show(session.LiveOutput{PID: 7, Tool: "Bash", Input: in, Elapsed: time.Second, Lines: []string{"one", "two", "\x1b]0;x"}, Total: 3})
	p.show(session.LiveOutput{PID: 7, Tool: "Bash", Input: in, Elapsed: 6 * time.Second, Lines: []string{"ten"}, Total: 10})
	p.show(session.LiveOutput{PID: 7, Done: true})
	want := strings.Join([]string{
		"⋯ Bash: for i in 1 2; do echo $i; done · 0.5 s",
		"  │ one",
		"  │ two",
		`  │ \x1b]0;x`,
		"⋯ Bash: for i in 1 2; do echo $i; done · 6.0 s",
		"  │ … 6 lines not shown",
		"  │ ten",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

// TestLivePrinterBinary: a tool writing binary data is said once to be
// binary, with no line of its bytes.
func TestLivePrinterBinary(t *testing.T) {
	var out bytes.Buffer
	p := newLivePrinter(&Env{Stdout: &out}, false)
	p.show(session.LiveOutput{PID: 9, Elapsed: 100 * time.Millisecond, Binary: true, Skipped: 8192})
	p.show(session.LiveOutput{PID: 9, Elapsed: 1100 * time.Millisecond, Binary: true, Skipped: 4200000})
	p.show(session.LiveOutput{PID: 9, Done: true})
	want := "⋯ running · 0.1 s\n  │ … binary output, not shown (8.0 KiB so far)\n"
	if out.String() != want {
		t.Errorf("printed\n%q\nwant\n%q", out.String(), want)
	}
}
