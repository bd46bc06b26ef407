//go:build linux

package bench

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
)

// benchInterruptAgent runs each message as a command and reads on after
// SIGINT (dash's read ends on a trapped signal).
const benchInterruptAgent = `trap 'exit 143' TERM; trap 'intr=1' INT; echo ready
while :; do
	if read -r l; then sh -c "$l"; echo "done: $?"
	elif [ -n "$intr" ]; then intr=
	else break; fi
done`

// BenchmarkInterrupt: a custom agent runs a long command; Interrupt →
// the session waiting, and → the command dead of SIGINT in the guest and
// the agent reading on (its "done: 130" line back on the host). Claude
// Code's figure, interrupt → its turn's end, is what
// TestInterruptClaudeCode logs.
func BenchmarkInterrupt(b *testing.B) {
	e := setup(b)
	root := b.TempDir()
	repo := emptyRepo(b, root)
	m, _ := e.manager(b, root)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := m.Start(ctx, session.Options{Repo: repo, CPUs: 2, MemoryMiB: 1024, DiskGiB: 1, NoNetwork: true,
		Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", benchInterruptAgent}}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Remove(context.Background(), s.ID, true)
	events := m.Subscribe(ctx, s.ID)
	waitFor := func(what string, ok func(session.Event) bool) time.Time { return waitEvent(b, ctx, events, what, ok) }
	logLine := func(text string) func(session.Event) bool {
		return func(ev session.Event) bool { return ev.Kind == session.EventLog && ev.Log.Text == text }
	}
	waitFor("ready", logLine("ready"))
	waiting := &series{Metric: "interrupt → session waiting (custom agent)", Key: "interrupt-waiting", Unit: "ms"}
	dead := &series{Metric: "interrupt → tool dead, agent reading on (custom agent)", Key: "interrupt-tool", Unit: "ms"}
	for i := 0; i < e.runs; i++ {
		if err := m.Chat(ctx, s.ID, "echo tool-running; sleep 4245"); err != nil {
			b.Fatal(err)
		}
		waitFor("the tool's first line", logLine("tool-running"))
		// A shell defers SIGINT while it forks: interrupt once the sleep
		// runs, as a person would.
		for {
			var out bytes.Buffer
			if _, err := m.Exec(ctx, s.ID, session.ExecRequest{Argv: []string{"sh", "-c",
				`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done | grep -c '^sleep [4]245 $' || true`}}, &out, io.Discard); err != nil {
				b.Fatal(err)
			}
			if strings.TrimSpace(out.String()) == "1" {
				break
			}
		}
		asked := time.Now()
		if err := m.Interrupt(ctx, s.ID); err != nil {
			b.Fatal(err)
		}
		// Waiting is said before Interrupt returns: read it from the store.
		if got, err := m.Get(ctx, s.ID); err != nil || got.Activity != session.ActivityWaiting {
			b.Fatalf("after the interrupt: %+v, %v", got, err)
		}
		waiting.add(ms(time.Since(asked)))
		done := waitFor("the tool's end", logLine("done: 130"))
		dead.add(ms(done.Sub(asked)))
	}
	e.report(b, waiting, dead)
}
