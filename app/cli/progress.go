package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"sandbar/app/imagebuild"
)

// progressBar draws image-build progress: a redrawn bar on a terminal, a
// line per stage otherwise (logs, CI). It is safe for concurrent Update
// calls, since downloads report from several goroutines.
type progressBar struct {
	mu        sync.Mutex
	w         io.Writer
	tty       bool
	stage     string
	seen      map[string]bool // stages already announced (non-terminal)
	lastDraw  time.Time
	lineWidth int
}

func newProgressBar(w io.Writer, tty bool) *progressBar { return &progressBar{w: w, tty: tty} }

func (p *progressBar) Update(pr imagebuild.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr.Stage != p.stage {
		if p.tty && p.lineWidth > 0 {
			fmt.Fprintln(p.w)
			p.lineWidth = 0
		}
		p.stage = pr.Stage
		if !p.tty && !p.seen[pr.Stage] {
			if p.seen == nil {
				p.seen = map[string]bool{}
			}
			p.seen[pr.Stage] = true
			fmt.Fprintf(p.w, "%s…\n", pr.Stage)
		}
	}
	if !p.tty {
		return
	}
	now := time.Now()
	if now.Sub(p.lastDraw) < 100*time.Millisecond && !(pr.Total > 0 && pr.Done == pr.Total) {
		return
	}
	p.lastDraw = now
	line := renderProgress(pr, 30)
	pad := ""
	if n := p.lineWidth - len([]rune(line)); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.lineWidth = len([]rune(line))
}

// renderProgress formats one progress line with a bar of the given width.
func renderProgress(pr imagebuild.Progress, width int) string {
	var frac float64
	var counts string
	switch {
	case pr.Total > 0:
		frac = float64(pr.Done) / float64(pr.Total)
		counts = fmt.Sprintf("%s/%s", humanBytes(pr.Done), humanBytes(pr.Total))
	case pr.Of > 0:
		frac = float64(pr.Count) / float64(pr.Of)
		counts = fmt.Sprintf("%d/%d", pr.Count, pr.Of)
	}
	if frac > 1 {
		frac = 1
	}
	filled := int(frac * float64(width))
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	item := pr.Item
	if len(item) > 32 {
		item = item[:31] + "…"
	}
	return fmt.Sprintf("%-10s %s %3.0f%% %s %s", pr.Stage, bar, frac*100, counts, item)
}

func (p *progressBar) Finish(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.lineWidth > 0 {
		fmt.Fprintln(p.w)
		p.lineWidth = 0
	}
	fmt.Fprintln(p.w, msg)
}

func (p *progressBar) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.lineWidth > 0 {
		fmt.Fprintln(p.w)
		p.lineWidth = 0
	}
}
