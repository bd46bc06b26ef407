package widget

import (
	"context"
	"io"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/ui/internal/terminal"
)

// TerminalConn is the far end of a Terminal: a command on a
// pseudo-terminal, which takes the keys typed and the screen's size.
type TerminalConn interface {
	io.Writer
	// CloseWrite ends its input.
	CloseWrite() error
	// Resize sets its terminal's size.
	Resize(rows, cols int) error
}

// TerminalStart starts a command on a pseudo-terminal of rows×cols whose
// output goes to out. wait returns once it has ended.
type TerminalStart func(out io.Writer, rows, cols int) (conn TerminalConn, wait func() error, err error)

// Terminal shows a command running on a pseudo-terminal elsewhere (a
// shell in a session's VM), with fyne-io/terminal's widget, and sends it
// the keys typed and the widget's size. What the command prints is drawn
// and nothing else: titles, clipboard writes, links and the rest do
// nothing (see app/ui/internal/terminal).
type Terminal struct {
	widget.BaseWidget
	term *terminal.Terminal

	// Post runs a function on the UI goroutine: fyne.Do, or the UI's.
	// Set it before Run.
	Post func(func())

	mu      sync.Mutex
	rows    int
	cols    int
	sized   chan struct{} // closed once the widget has a size
	resized chan struct{} // a new size for the running command
}

// NewTerminal returns an empty terminal.
func NewTerminal() *Terminal {
	t := &Terminal{term: terminal.New(), Post: fyne.Do, sized: make(chan struct{}), resized: make(chan struct{}, 1)}
	t.term.OnResize = t.setSize
	t.ExtendBaseWidget(t)
	return t
}

// CreateRenderer draws the inner terminal.
func (t *Terminal) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(t.term)
}

// Focusable is what takes the keyboard: focus it to type into the
// command.
func (t *Terminal) Focusable() fyne.Focusable { return t.term }

// Text is what the screen shows, a line per row. Call it on the UI
// goroutine.
func (t *Terminal) Text() string { return t.term.Text() }

// GridSize is the screen's size in cells; 0×0 before the widget is laid out.
func (t *Terminal) GridSize() (rows, cols int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rows, t.cols
}

func (t *Terminal) setSize(rows, cols uint) {
	if rows == 0 || cols == 0 {
		return
	}
	t.mu.Lock()
	first := t.rows == 0
	t.rows, t.cols = int(rows), int(cols)
	t.mu.Unlock()
	if first {
		close(t.sized)
	}
	select {
	case t.resized <- struct{}{}:
	default: // one is pending: it reads the newest size
	}
}

// Run starts a command with start, once the widget has a size, and shows
// it until wait returns or ctx ends; the command's size follows the
// widget's. Run blocks: call it off the UI goroutine, one at a time.
func (t *Terminal) Run(ctx context.Context, start TerminalStart) error {
	select {
	case <-t.sized:
	case <-ctx.Done():
		return ctx.Err()
	}
	t.term.Post = t.Post
	rows, cols := t.GridSize()
	pr, pw := io.Pipe()
	conn, wait, err := start(pw, rows, cols)
	if err != nil {
		pw.Close()
		return err
	}
	// stop ends the reader when the UI goroutine no longer takes what
	// it reads (the window closed); the resizes end with it.
	stop := make(chan struct{})
	read := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(read)
		t.term.RunWithConnection(closeWriter{conn}, pr, stop)
		pr.Close() // a write after the end fails, not blocks
	})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-t.resized:
				if r, c := t.GridSize(); r != rows || c != cols {
					rows, cols = r, c
					conn.Resize(r, c)
				}
			}
		}
	})
	err = wait()
	pw.Close() // its output has all been written: the reader ends after it
	select {
	case <-read:
	case <-ctx.Done():
	}
	close(stop)
	wg.Wait()
	return err
}

// closeWriter closes a connection's input.
type closeWriter struct{ TerminalConn }

func (c closeWriter) Close() error { return c.CloseWrite() }
