package cli

import (
	"fmt"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/readable"
	"sandbar/app/session"
)

// liveEvery is how often, in a running tool's elapsed time, `logs -f`
// says again what runs and for how long.
const liveEvery = 5 * time.Second

// livePrinter prints running tools' live output (session.EventLive) for
// `logs -f` and the --wait verbs: a header with the tool and its elapsed
// time when it starts and every liveEvery, then each line once it ends,
// marked "│". The terminal is append-only: the tool's folded result,
// from the log, follows the live lines when the tool ends. Escaped,
// unless raw.
type livePrinter struct {
	env     *Env
	raw     bool
	printed map[int]int64         // lines printed, by the tool's pid
	said    map[int]time.Duration // elapsed last said, by pid
	binary  map[int]bool          // "binary output" said, by pid
}

func newLivePrinter(env *Env, raw bool) *livePrinter {
	return &livePrinter{env: env, raw: raw, printed: map[int]int64{}, said: map[int]time.Duration{}, binary: map[int]bool{}}
}

func (p *livePrinter) line(s string) {
	if !p.raw {
		s = termsafe.Text(s)
	}
	fmt.Fprintln(p.env.Stdout, s)
}

func (p *livePrinter) show(l session.LiveOutput) {
	if l.Done {
		delete(p.printed, l.PID)
		delete(p.said, l.PID)
		delete(p.binary, l.PID)
		return
	}
	said, seen := p.said[l.PID]
	if !seen || l.Elapsed-said >= liveEvery {
		p.line(readable.LiveHeader(l))
		p.said[l.PID] = l.Elapsed
	}
	if l.Binary && !p.binary[l.PID] {
		p.line(readable.LiveSkipped(l))
		p.binary[l.PID] = true
	}
	ended := l.Lines
	if l.Partial {
		ended = ended[:len(ended)-1]
	}
	first := l.Total - int64(len(ended)) + 1 // the number of ended[0]
	if done := p.printed[l.PID]; done < first-1 && seen {
		p.line(fmt.Sprintf("  │ … %d lines not shown", first-1-done))
	}
	for i, t := range ended {
		if first+int64(i) > p.printed[l.PID] {
			p.line(readable.LiveLine(t))
		}
	}
	p.printed[l.PID] = max(p.printed[l.PID], l.Total)
}
