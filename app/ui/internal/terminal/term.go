package terminal

import (
	"image/color"
	"io"
	"math"
	"runtime"
	"sync"
	"unicode"
	"unicode/utf8"

	widget2 "sandbar/app/ui/internal/terminal/internal/widget"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/driver/mobile"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

const (
	bufLen           = 32768 // 32KB buffer for output, to align with modern L1 cache
	highlightBitMask = 0x55
)

// Config is the state of a terminal, updated upon certain actions or commands.
// Use Terminal.OnConfigure hook to register for changes.
type Config struct {
	Rows, Columns uint
}

type charSet int

const (
	charSetANSII charSet = iota
	charSetDECSpecialGraphics
	charSetAlternate
)

// Terminal is a terminal widget that loads a shell and handles input/output.
type Terminal struct {
	widget.BaseWidget
	fyne.ShortcutHandler
	content      *widget2.TermGrid
	config       Config
	listenerLock sync.Mutex
	listeners    []chan Config

	in  io.WriteCloser
	out io.Reader

	bell, bold, debug, focused bool
	currentFG, currentBG       color.Color
	cursorRow, cursorCol       int
	savedRow, savedCol         int
	scrollTop, scrollBottom    int

	cursor                   *canvas.Rectangle
	cursorHidden, bufferMode bool // buffer mode is an xterm extension that impacts control keys
	cursorMoved              func()

	// Alternate screen buffer (used by curses/fullscreen apps via ?1049h/?47h)
	altSavedGrid    []widget.TextGridRow // saved main screen rows
	altSavedRow     int                  // saved cursor row
	altSavedCol     int                  // saved cursor col
	altBufferActive bool                 // true when alternate buffer is in use

	onMouseDown, onMouseUp func(int, fyne.KeyModifier, fyne.Position)
	g0Charset              charSet
	g1Charset              charSet
	useG1CharSet           bool

	selStart, selEnd *position
	selectClipSource *selectClipboard
	blockMode        bool
	selecting        bool
	mouseCursor      desktop.Cursor

	keyboardState struct {
		shiftPressed bool
		ctrlPressed  bool
		altPressed   bool
	}
	newLineMode        bool // new line mode or line feed mode
	bracketedPasteMode bool
	disableAutoWrap    bool // disable auto wrap mode (DECAWM off)
	lastChar           rune // last graphic character output (for CSI b REP)
	state              *parseState
	blinking           bool

	// Post runs a function on the UI goroutine (Sandbar): fyne.Do when
	// nil, a test's queue in tests. All of the output is handled there.
	Post func(func())

	// OnResize, when set, is told the grid's size in cells whenever it
	// changes (Sandbar: it sets the size of the shell's PTY in the guest).
	// It runs on the UI goroutine and must not block.
	OnResize func(rows, cols uint)
}

// Cursor is used for displaying a specific cursor.
func (t *Terminal) Cursor() desktop.Cursor {
	if t == nil || t.mouseCursor == nil {
		return desktop.DefaultCursor
	}
	return t.mouseCursor
}

// AcceptsTab indicates that this widget will use the Tab key (avoids loss of focus).
func (t *Terminal) AcceptsTab() bool {
	return true
}

// AddListener registers a new outgoing channel that will have our Config sent each time it changes.
func (t *Terminal) AddListener(listener chan Config) {
	t.listenerLock.Lock()
	defer t.listenerLock.Unlock()

	t.listeners = append(t.listeners, listener)
}

// MinSize provides a size large enough that a terminal could technically funcion.
func (t *Terminal) MinSize() fyne.Size {
	s := t.guessCellSize()
	return fyne.NewSize(s.Width*2.5, s.Height*1.2) // just enough to get a terminal init
}

// MouseDown handles the down action for desktop mouse events.
func (t *Terminal) MouseDown(ev *desktop.MouseEvent) {
	if c := fyne.CurrentApp().Driver().CanvasForObject(t); c != nil {
		c.Focus(t)
	}

	if t.hasSelectedText() {
		t.clearSelectedText()
	}
	if ev.Button == desktop.MouseButtonSecondary {
		t.pasteText(t.selectClipboard())
	}

	if t.onMouseDown == nil {
		return
	}

	if ev.Button == desktop.MouseButtonPrimary {
		t.onMouseDown(1, ev.Modifier, ev.Position)
	} else if ev.Button == desktop.MouseButtonSecondary {
		t.onMouseDown(2, ev.Modifier, ev.Position)
	}
}

// MouseUp handles the up action for desktop mouse events.
func (t *Terminal) MouseUp(ev *desktop.MouseEvent) {

	if t.onMouseDown == nil {
		return
	}

	if ev.Button == desktop.MouseButtonPrimary {
		t.onMouseUp(1, ev.Modifier, ev.Position)
	} else if ev.Button == desktop.MouseButtonSecondary {
		t.onMouseUp(2, ev.Modifier, ev.Position)
	}
}

// DoubleTapped handles the double tapped event.
func (t *Terminal) DoubleTapped(pe *fyne.PointEvent) {
	pos := t.sanitizePosition(pe.Position)
	termPos := t.getTermPosition(*pos)
	row, col := termPos.Row, termPos.Col

	if t.hasSelectedText() {
		t.clearSelectedText()
	}

	if row < 1 || row > len(t.content.Rows) {
		return
	}

	rowContent := t.content.Rows[row-1].Cells

	if col < 0 || col >= len(rowContent) {
		return // No valid character under the cursor, do nothing
	}

	start, end := col-1, col-1

	if !unicode.IsLetter(rowContent[start].Rune) && !unicode.IsDigit(rowContent[start].Rune) {
		return
	}

	for start > 0 && (unicode.IsLetter(rowContent[start-1].Rune) || unicode.IsDigit(rowContent[start-1].Rune)) {
		start--
	}
	if start < len(rowContent) && !unicode.IsLetter(rowContent[start].Rune) && !unicode.IsDigit(rowContent[start].Rune) {
		start++
	}
	for end < len(rowContent) && (unicode.IsLetter(rowContent[end].Rune) || unicode.IsDigit(rowContent[end].Rune)) {
		end++
	}
	if start == end {
		return
	}

	t.selStart = &position{Row: row, Col: start + 1}
	t.selEnd = &position{Row: row, Col: end}

	t.highlightSelectedText()
	t.selectClipboard().SetContent(t.SelectedText())
}

// RemoveListener de-registers a Config channel and closes it
func (t *Terminal) RemoveListener(listener chan Config) {
	t.listenerLock.Lock()
	defer t.listenerLock.Unlock()

	for i, l := range t.listeners {
		if l == listener {
			if i < len(t.listeners)-1 {
				t.listeners = append(t.listeners[:i], t.listeners[i+1:]...)
			} else {
				t.listeners = t.listeners[:i]
			}
			close(l)
			return
		}
	}
}

// Resize is called when this terminal widget has been resized.
// It ensures that the virtual terminal is within the bounds of the widget.
func (t *Terminal) Resize(s fyne.Size) {
	cellSize := t.guessCellSize()
	cols := uint(math.Floor(float64(s.Width) / float64(cellSize.Width)))
	rows := uint(math.Floor(float64(s.Height) / float64(cellSize.Height)))
	if (t.config.Columns == cols) && (t.config.Rows == rows) {
		return
	}

	t.BaseWidget.Resize(s)
	if t.content != nil {
		t.content.Resize(fyne.NewSize(float32(cols)*cellSize.Width, float32(rows)*cellSize.Height))
	}

	oldRows := int(t.config.Rows)
	t.config.Columns, t.config.Rows = cols, rows
	if t.scrollBottom == 0 || t.scrollBottom == oldRows-1 {
		t.scrollBottom = int(t.config.Rows) - 1
	}
	t.onConfigure()

	if t.OnResize != nil {
		t.OnResize(rows, cols)
	}
}

// SetDebug turns on output about terminal codes and other errors if the parameter is `true`.
func (t *Terminal) SetDebug(debug bool) {
	t.debug = debug
}

// Tapped makes sure we ask for focus if user taps us.
func (t *Terminal) Tapped(ev *fyne.PointEvent) {
	if c := fyne.CurrentApp().Driver().CanvasForObject(t); c != nil {
		c.Focus(t)
	}
}

// Text returns the contents of the buffer as a single string joined with `\n` (no style information).
func (t *Terminal) Text() string {
	return t.content.Text()
}

// TouchCancel handles the tap action for mobile apps that lose focus during tap.
func (t *Terminal) TouchCancel(ev *mobile.TouchEvent) {
	if t.onMouseUp != nil {
		t.onMouseUp(1, 0, ev.Position)
	}
}

// TouchDown handles the down action for mobile touch events.
func (t *Terminal) TouchDown(ev *mobile.TouchEvent) {
	if c := fyne.CurrentApp().Driver().CanvasForObject(t); c != nil {
		c.Focus(t)
	}

	if t.onMouseDown != nil {
		t.onMouseDown(1, 0, ev.Position)
	}
}

// TouchUp handles the up action for mobile touch events.
func (t *Terminal) TouchUp(ev *mobile.TouchEvent) {
	if t.onMouseUp != nil {
		t.onMouseUp(1, 0, ev.Position)
	}
}

func (t *Terminal) onConfigure() {
	t.listenerLock.Lock()
	for _, l := range t.listeners {
		select {
		case l <- t.config:
		default:
			// channel blocked, might be closed
		}
	}
	t.listenerLock.Unlock()
}

// Exit requests that this terminal exits.
// If there are embedded shells it will exit the child one only.
func (t *Terminal) Exit() {
	_, _ = t.Write([]byte{0x4})
}

// don't call often - should we cache?
func (t *Terminal) guessCellSize() fyne.Size {
	cell := canvas.NewText("M", color.White)
	cell.TextStyle.Monospace = true

	scale := t.Theme().Size(theme.SizeNameText) / theme.TextSize()
	min := cell.MinSize()
	return fyne.NewSize(float32(math.Round(float64(min.Width*scale))), float32(math.Round(float64(min.Height*scale))))
}

// post runs fn on the UI goroutine: Post, else fyne.Do.
func (t *Terminal) post(fn func()) {
	if t.Post != nil {
		t.Post(fn)
		return
	}
	fyne.Do(fn)
}

// onUI runs fn on the UI goroutine and waits for it, unless stop is
// closed first.
func (t *Terminal) onUI(stop <-chan struct{}, fn func()) {
	done := make(chan struct{})
	t.post(func() {
		defer close(done)
		fn()
	})
	select {
	case <-done:
	case <-stop:
	}
}

// run reads the output until it ends or stop is closed, and hands it to
// handleOutput on the UI goroutine, a read at a time, waiting for each.
//
// Sandbar: upstream parsed on the reading goroutine and posted a
// function per character, while some sequences (ESC 7, 8, D, M) moved
// the cursor and scrolled from the reading goroutine at once: out of
// order, and racing the UI goroutine. A character's bytes split
// between two reads are kept for the next (upstream dropped them).
func (t *Terminal) run(stop <-chan struct{}) {
	buf := make([]byte, bufLen)
	var pending []byte
	for {
		num, err := t.out.Read(buf)
		if num > 0 {
			data := append(pending, buf[:num]...)
			cut := incompleteTail(data)
			pending = append([]byte(nil), data[len(data)-cut:]...)
			data = data[:len(data)-cut]
			t.onUI(stop, func() {
				if t.content == nil {
					return // never shown
				}
				t.handleOutput(data)
				t.Refresh()
			})
		}
		if err != nil {
			// Sandbar: the output is a pipe that ends with the shell.
			// (Upstream went on reading after any other error.)
			if err != io.EOF {
				fyne.LogError("terminal read error", err)
			}
			return
		}
		select {
		case <-stop:
			return
		default:
		}
	}
}

// incompleteTail is how many bytes at the end of b begin a UTF-8
// character that is not whole yet.
func incompleteTail(b []byte) int {
	for n := 1; n < utf8.UTFMax && n <= len(b); n++ {
		c := b[len(b)-n]
		if utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(b[len(b)-n:]) {
				return n
			}
			return 0
		}
	}
	return 0
}

// RunWithConnection shows what out gives until it ends or stop is
// closed, and sends the keys typed to in, which it closes at the end.
//
// Sandbar: it starts at once (upstream polled, forever if the widget was
// never shown: the caller waits for OnResize instead), stop ends it, and
// it is the only way to run the terminal.
func (t *Terminal) RunWithConnection(in io.WriteCloser, out io.Reader, stop <-chan struct{}) error {
	t.onUI(stop, func() { t.in = in })
	t.out = out
	t.run(stop)
	t.post(func() { t.in = discardWriter{} })
	return in.Close()
}

// Write is used to send commands into an open terminal connection.
// Errors will be returned if the connection is not established, has closed, or there was a problem in transmission.
func (t *Terminal) Write(b []byte) (int, error) {
	if t.in == nil {
		return 0, io.EOF
	}

	return t.in.Write(b)
}

func (t *Terminal) setupShortcuts() {
	var paste fyne.Shortcut
	paste = &desktop.CustomShortcut{KeyName: fyne.KeyV, Modifier: fyne.KeyModifierShift | fyne.KeyModifierShortcutDefault}
	if runtime.GOOS == "darwin" {
		paste = &fyne.ShortcutPaste{} // we look up clipboard later
	}
	t.ShortcutHandler.AddShortcut(paste,
		func(sh fyne.Shortcut) {
			clip := fyne.CurrentApp().Clipboard()
			if ps, ok := sh.(*fyne.ShortcutPaste); ok && ps.Secondary {
				clip = t.selectClipboard()
			}
			t.pasteText(clip)
		})
	var shortcutCopy fyne.Shortcut
	shortcutCopy = &desktop.CustomShortcut{KeyName: fyne.KeyC, Modifier: fyne.KeyModifierShift | fyne.KeyModifierShortcutDefault}
	if runtime.GOOS == "darwin" {
		shortcutCopy = &fyne.ShortcutCopy{} // we look up clipboard later
	}

	t.ShortcutHandler.AddShortcut(shortcutCopy,
		func(_ fyne.Shortcut) {
			t.copySelectedText(fyne.CurrentApp().Clipboard())
		})
}

// New sets up a new terminal instance with the bash shell
func New() *Terminal {
	t := &Terminal{
		mouseCursor: desktop.DefaultCursor,
		in:          discardWriter{},
	}
	t.ExtendBaseWidget(t)

	return t
}

// sanitizePosition ensures that the given position p is within the bounds of the terminal.
// If the position is outside the bounds, it adjusts the coordinates to the nearest valid values.
// The adjusted position is then returned.
func (t *Terminal) sanitizePosition(p fyne.Position) *fyne.Position {
	size := t.Size()
	width, height := size.Width, size.Height
	if p.X < 0 {
		p.X = 0
	} else if p.X > width {
		p.X = width
	}

	if p.Y < 0 {
		p.Y = 0
	} else if p.Y > height {
		p.Y = height
	}

	return &p
}

// Dragged is called by fyne when the left mouse is down and moved whilst over the widget.
func (t *Terminal) Dragged(d *fyne.DragEvent) {
	pos := t.sanitizePosition(d.Position)
	if !t.selecting {
		if t.keyboardState.altPressed {
			t.blockMode = true
		}
		p := t.getTermPosition(*pos)
		t.selStart = &p
		t.selEnd = nil
	}
	// clear any previous selection
	sr, sc, er, ec := t.getSelectedRange()
	widget2.ClearHighlightRange(t.content, t.blockMode, sr, sc, er, ec)

	// make sure that x,y,x1,y1 are always positive
	t.selecting = true
	t.mouseCursor = desktop.TextCursor
	p := t.getTermPosition(*pos)
	t.selEnd = &p
	t.highlightSelectedText()
}

// DragEnd is called by fyne when the left mouse is released after a Drag event.
func (t *Terminal) DragEnd() {
	if t.selecting {
		t.selectClipboard().SetContent(t.SelectedText())
	}
	t.selecting = false
}
