package widget

import (
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
)

// isMatch reports whether line abs matches the query.
func (v *LogView) isMatch(abs int64) bool {
	if v.query == "" {
		return false
	}
	i := v.rowIndexInMatches(abs)
	return i < len(v.matches) && v.matches[i] == abs
}

// rowIndexInMatches is the position of line abs among the matches, or
// where it would be.
func (v *LogView) rowIndexInMatches(abs int64) int {
	lo, hi := 0, len(v.matches)
	for lo < hi {
		m := (lo + hi) / 2
		if v.matches[m] < abs {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// SetQuery searches the lines held for q (case-insensitive) and
// highlights the matches.
func (v *LogView) SetQuery(q string) {
	q = strings.ToLower(q)
	if q == v.query {
		return
	}
	topAbs := v.rowAbs(v.pane.top)
	v.query = q
	v.matches = v.matches[:0]
	v.current = -1
	if q != "" {
		for abs := v.ring.first; abs < v.ring.next; abs++ {
			if containsFold(v.ring.at(abs).text, q) {
				v.matches = append(v.matches, abs)
			}
		}
	}
	if strings.ToLower(v.search.Text) != q {
		v.search.SetText(q)
	}
	v.refilter(topAbs)
	v.updateChrome()
}

// refilter shows the rows anew after the query or the filter changed,
// keeping in view the current match, else the line that was at the top.
func (v *LogView) refilter(topAbs int64) {
	top := v.pane.top
	switch {
	case v.follow:
		top = v.pane.maxTop()
	case v.current >= 0:
		top = v.rowIndex(v.current) - v.pane.rows/3
	case topAbs >= 0:
		top = v.rowIndex(topAbs)
	}
	v.pane.scrollTo(top, false)
}

// SetFilter shows only matching lines (when there is a query) or all.
func (v *LogView) SetFilter(on bool) {
	if on == v.filter {
		return
	}
	topAbs := v.rowAbs(v.pane.top)
	v.filter = on
	if v.only.Checked != on {
		v.only.SetChecked(on)
	}
	v.refilter(topAbs)
	v.updateChrome()
}

// NextMatch moves to the match after the current one (the first when
// none is current), pausing the tail.
func (v *LogView) NextMatch() { v.moveMatch(1) }

// PrevMatch moves to the match before the current one (the last when
// none is current).
func (v *LogView) PrevMatch() { v.moveMatch(-1) }

func (v *LogView) moveMatch(dir int) {
	if len(v.matches) == 0 {
		return
	}
	i := len(v.matches) - 1
	if dir > 0 {
		i = 0
	}
	if v.current >= 0 {
		i = v.rowIndexInMatches(v.current) + dir
		if i < 0 {
			i = len(v.matches) - 1
		} else if i >= len(v.matches) {
			i = 0
		}
	}
	v.current = v.matches[i]
	v.follow, v.unseen = false, 0
	v.pane.show(v.rowIndex(v.current))
	v.updateChrome()
}

// CurrentMatch is the text of the current match, "" for none.
func (v *LogView) CurrentMatch() string {
	if v.current < v.ring.first {
		return ""
	}
	return v.ring.at(v.current).text
}

func (v *LogView) selectLine(abs int64) {
	if abs < v.ring.first || abs >= v.ring.next {
		return
	}
	if v.selected == abs {
		abs = -1 // a second tap unselects
	}
	v.selected = abs
	v.pane.Refresh()
}

// Copy puts the selected line on the clipboard, or every row shown when
// none is selected.
func (v *LogView) Copy() {
	var text string
	if v.selected >= v.ring.first && v.selected < v.ring.next {
		text = v.ring.at(v.selected).text
	} else {
		text = strings.Join(v.Lines(), "\n")
	}
	if a := fyne.CurrentApp(); a != nil {
		a.Clipboard().SetContent(text)
	}
}

// containsFold reports whether s contains q, which is lower case,
// ignoring case; ASCII text is compared without allocating.
func containsFold(s, q string) bool {
	for i := 0; i < len(q); i++ {
		if q[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(s), q)
		}
	}
	n := len(q)
outer:
	for i := 0; i+n <= len(s); i++ {
		for j := 0; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != q[j] {
				continue outer
			}
		}
		return true
	}
	return false
}
