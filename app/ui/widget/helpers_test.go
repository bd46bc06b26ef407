package widget

import (
	"strings"

	"fyne.io/fyne/v2"
)

// logHas reports whether v shows a line containing s.
func logHas(v *LogView, s string) bool {
	for _, l := range v.Lines() {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// pressEnter presses Enter in e.
func pressEnter(e interface{ TypedKey(*fyne.KeyEvent) }) {
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}
