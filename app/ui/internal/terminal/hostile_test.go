package terminal

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// A terminal here shows bytes from a coding agent's VM: these are the
// sequences by which a hostile guest could reach the host through
// upstream's terminal, each of which must do nothing but draw.

// sized is a terminal of 24 rows of 80 columns, as a window shows one.
func sizedTerminal(t *testing.T) *Terminal {
	t.Helper()
	test.NewTempApp(t)
	term := New()
	w := test.NewTempWindow(t, term)
	cell := term.guessCellSize()
	w.Resize(fyne.NewSize(cell.Width*80+20, cell.Height*24+20))
	term.Resize(fyne.NewSize(cell.Width*80, cell.Height*24))
	if term.config.Columns != 80 || term.config.Rows != 24 {
		t.Fatalf("the terminal is %dx%d, not 24x80", term.config.Rows, term.config.Columns)
	}
	return term
}

func TestHostileOSCChangesNothingOnTheHost(t *testing.T) {
	term := sizedTerminal(t)
	clip := fyne.CurrentApp().Clipboard()
	clip.SetContent("the person's clipboard")
	dir := t.TempDir()
	before, _ := os.Getwd()
	var configs []Config
	ch := make(chan Config, 16)
	term.AddListener(ch)

	term.handleOutput([]byte(
		"\x1b]7;file://host" + dir + "\x07" + // upstream: os.Chdir(dir)
			"\x1b]7;file://" + dir + "\x1b\\" +
			"\x1b]0;Owned title\x07\x1b]2;Owned title\x1b\\" + // upstream: Config.Title
			"\x1b]52;c;aGVsbG8=\x07" + // clipboard write
			"\x1b]8;;file:///etc/passwd\x07link\x1b]8;;\x07" + // a link
			"\x1bPevil\x1b\\\x1b_apc\x00" + // DCS, APC
			"\x1b[5ihidden\x1b[4i")) // printer mode
	close(ch)
	for c := range ch {
		configs = append(configs, c)
	}

	if now, _ := os.Getwd(); now != before {
		os.Chdir(before)
		t.Errorf("OSC 7 moved the host process to %s", now)
	}
	if got := clip.Content(); got != "the person's clipboard" {
		t.Errorf("OSC 52 wrote the clipboard: %q", got)
	}
	if len(configs) != 0 {
		t.Errorf("the title sequences reached the listeners: %+v", configs)
	}
	text := term.Text()
	if !strings.Contains(text, "link") || !strings.Contains(text, "hidden") {
		t.Errorf("the text around the sequences is not drawn: %q", text)
	}
	if strings.Contains(text, "Owned") || strings.Contains(text, "passwd") {
		t.Errorf("a sequence's payload was drawn: %q", text)
	}
}

// Sequences that upstream looped, allocated or indexed on without a
// bound: each ends at once, and the screen stays its size.
func TestHostileSizesAreBounded(t *testing.T) {
	for name, seq := range map[string]string{
		"repeat a billion":       "x\x1b[1000000000b",
		"insert chars past rows": strings.Repeat("\x1b[99999@", 2000),
		"erase chars":            "\x1b[10;70H\x1b[99999999X",
		"delete chars past end":  "\x1b[1;79H\x1b[5P\x1b[24;80Hx\x1b[1;1H\x1b[99P",
		"scroll region past end": "\x1b[1;99999r" + strings.Repeat("\n", 100) + "\x1b[50M\x1b[50L\x1b[99999T\x1b[99999S",
		"cursor far away":        "\x1b[99999;99999Hx\x1b[99999d\x1b[99999G\x1b[99999A",
		"long number":            "\x1b[" + strings.Repeat("9", 5000) + "@",
		"overflowing number":     "\x1b[99999999999999999999999999b",
	} {
		t.Run(name, func(t *testing.T) {
			term := sizedTerminal(t)
			start := time.Now()
			term.handleOutput([]byte(seq))
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
			if n := len(term.content.Rows); n > 24 {
				t.Errorf("the screen has %d rows", n)
			}
			for i, r := range term.content.Rows {
				if len(r.Cells) > 80 {
					t.Errorf("row %d has %d cells", i, len(r.Cells))
				}
			}
		})
	}
}

// An escape sequence that never ends is held up to maxCodeLen, not
// whole, and the text after its end is drawn.
func TestHostileUnterminatedSequence(t *testing.T) {
	term := sizedTerminal(t)
	huge := bytes.Repeat([]byte("A"), 8<<20)
	for _, intro := range []string{"\x1b]0;", "\x1bP", "\x1b_"} {
		term.handleOutput(append([]byte(intro), huge...))
		if n := len(term.state.code); n > maxCodeLen {
			t.Fatalf("%q: %d bytes held", intro, n)
		}
		end := "\x07"
		switch intro {
		case "\x1bP":
			end = "\\"
		case "\x1b_":
			end = "\x00"
		}
		term.handleOutput([]byte(end + "after"))
		if !strings.Contains(term.Text(), "after") {
			t.Fatalf("%q: the text after the sequence is not drawn: %q", intro, term.Text())
		}
		term.handleOutput([]byte("\x1b[2J\x1b[H"))
	}
}
