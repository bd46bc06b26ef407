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
