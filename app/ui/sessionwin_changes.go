package ui

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/workspace"
)

// changesPanel is the session window's Changes tab: the files that
// differ from the session's base, and the diff of the one selected.
type changesPanel struct {
	w        *sessionWindow
	summary  *widget.Label
	files    []workspace.FileChange
	list     *widget.List
	title    *widget.Label
	diff     *widget.TextGrid
	selected string // path of the selected file
	selID    widget.ListItemID
	gen      int // numbers diff loads, so a late one does not overwrite a newer
	content  fyne.CanvasObject
}

func newChangesPanel(w *sessionWindow) *changesPanel {
	c := &changesPanel{w: w, summary: widget.NewLabel("Reading the workspace…"), title: widget.NewLabel("Select a file to see its diff.")}
	c.summary.Wrapping = fyne.TextWrapWord
	c.title.TextStyle.Bold = true
	c.title.Truncation = fyne.TextTruncateEllipsis
	c.diff = widget.NewTextGrid()
	// NewTextGrid does not scroll: its minimum size would be the whole
	// diff's, and the window would grow to hold it.
	c.diff.Scroll = fyne.ScrollBoth
	c.list = widget.NewList(
		func() int { return len(c.files) },
		func() fyne.CanvasObject {
			// The kind of change on the right, in words, so the
			// paths line up on the left.
			status := widget.NewLabel("untracked")
			status.SizeName = theme.SizeNameCaptionText
			path := widget.NewLabel("")
			path.Truncation = fyne.TextTruncateEllipsis
			return container.NewBorder(nil, nil, nil, status, path)
		},
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id >= len(c.files) {
				return
			}
			f := c.files[id]
			box := o.(*fyne.Container)
			path := box.Objects[0].(*widget.Label)
			status := box.Objects[1].(*widget.Label)
			word, imp := changeWords(f.Status)
			status.Importance = imp
			status.SetText(word)
			name := f.Path
			if f.From != "" {
				name = f.Path + " (from " + f.From + ")"
			}
			path.SetText(displayLine(name))
		})
	c.selID = -1
	c.list.OnSelected = func(id widget.ListItemID) {
		if id < len(c.files) {
			c.selID = id
			c.selectFile(c.files[id], false)
		}
	}
	split := container.NewHSplit(c.list, container.NewBorder(c.title, nil, nil, nil, c.diff))
	split.Offset = 0.3
	c.content = container.NewBorder(c.summary, nil, nil, nil, split)
	return c
}

// reload reads the changes from the backend; it runs off the UI
// goroutine.
func (c *changesPanel) reload(ctx context.Context) {
	ch, err := c.w.u.Backend.Changes(ctx, c.w.id)
	if ctx.Err() != nil {
		return
	}
	c.w.ui(func() {
		if err != nil {
			c.summary.SetText("Cannot read the session's changes: " + displayLine(err.Error()))
			return
		}
		c.set(ch)
	})
}

// set shows ch, keeping the selected file (and refreshing its diff, as
// it may have changed).
func (c *changesPanel) set(ch workspace.Changes) {
	c.files = ch.Files
	c.summary.SetText(changesSummary(ch))
	c.list.Refresh()
	if c.selected == "" {
		return
	}
	for i, f := range c.files {
		if f.Path == c.selected {
			if i != c.selID {
				c.list.Select(i) // OnSelected loads its diff
			} else {
				c.selectFile(f, true)
			}
			return
		}
	}
	c.list.UnselectAll()
	c.selected, c.selID = "", -1
	c.title.SetText("Select a file to see its diff.")
	c.diff.SetText("")
}

// changesSummary is the line above the files: how many, and git's total
// of lines added and removed (new, untracked files are not in it).
func changesSummary(ch workspace.Changes) string {
	if len(ch.Files) == 0 && ch.Ahead == 0 {
		return "No changes since the session started."
	}
	parts := []string{fmt.Sprintf("%d %s changed", len(ch.Files), pluralWord(len(ch.Files), "file", "files"))}
	if ch.Ahead > 0 {
		parts = append(parts, fmt.Sprintf("%d %s on the branch", ch.Ahead, pluralWord(ch.Ahead, "commit", "commits")))
	}
	if ins, del, ok := diffStatCounts(ch.DiffStat); ok {
		parts = append(parts, fmt.Sprintf("%d %s added and %d removed in files the repository had", ins, pluralWord(ins, "line", "lines"), del))
	}
	return strings.Join(parts, " · ")
}

// diffStatCounts reads the insertions and deletions from the last line
// of git diff --stat ("3 files changed, 10 insertions(+), 2 deletions(-)").
func diffStatCounts(stat string) (ins, del int, ok bool) {
	stat = strings.TrimSpace(stat)
	if stat == "" {
		return 0, 0, false
	}
	last := stat[strings.LastIndexByte(stat, '\n')+1:]
	for _, part := range strings.Split(last, ",") {
		var n int
		var what string
		if _, err := fmt.Sscan(strings.TrimSpace(part), &n, &what); err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(what, "insertion"):
			ins, ok = n, true
		case strings.HasPrefix(what, "deletion"):
			del, ok = n, true
		}
	}
	return ins, del, ok
}

// selectFile loads f's diff off the UI goroutine; a reload keeps the
// diff shown until the new one is there.
func (c *changesPanel) selectFile(f workspace.FileChange, reload bool) {
	if !reload {
		c.title.SetText(displayLine(f.Path))
		c.diff.SetText("Loading…")
	}
	c.selected = f.Path
	c.gen++
	gen := c.gen
	c.w.spawn(func(ctx context.Context) {
		text, err := c.w.u.Backend.FileDiff(ctx, c.w.id, f)
		if ctx.Err() != nil {
			return
		}
		c.w.ui(func() {
			if gen != c.gen {
				return
			}
			if err != nil {
				c.diff.SetText("Cannot show the diff: " + displayLine(err.Error()))
				return
			}
			c.showDiff(text)
		})
	})
}

// showDiff fills the diff view, one coloured row per line.
func (c *changesPanel) showDiff(text string) {
	lines, more := diffLines(text)
	if strings.TrimSpace(text) == "" {
		lines, more = []string{"No difference: the file is as it was at the session's start (the list may be behind)."}, ""
	}
	add := &widget.CustomTextGridStyle{FGColor: theme.Color(theme.ColorNameSuccess)}
	del := &widget.CustomTextGridStyle{FGColor: theme.Color(theme.ColorNameError)}
	hunk := &widget.CustomTextGridStyle{FGColor: theme.Color(theme.ColorNamePrimary)}
	meta := &widget.CustomTextGridStyle{FGColor: theme.Color(theme.ColorNamePlaceHolder), TextStyle: fyne.TextStyle{Bold: true}}
	rows := make([]widget.TextGridRow, 0, len(lines)+1)
	for _, l := range lines {
		row := textRow(l)
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"),
			strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "index "), strings.HasPrefix(l, "Binary files"):
			row.Style = meta
		case strings.HasPrefix(l, "+"):
			row.Style = add
		case strings.HasPrefix(l, "-"):
			row.Style = del
		case strings.HasPrefix(l, "@@"):
			row.Style = hunk
		case strings.HasPrefix(l, "\\"):
			row.Style = meta
		}
		rows = append(rows, row)
	}
	if more != "" {
		row := textRow(more)
		row.Style = meta
		rows = append(rows, row)
	}
	c.diff.Rows = rows
	c.diff.Refresh()
}

// textRow is one row of the diff view.
func textRow(l string) widget.TextGridRow {
	cells := make([]widget.TextGridCell, 0, len(l))
	for _, r := range l {
		cells = append(cells, widget.TextGridCell{Rune: r})
	}
	return widget.TextGridRow{Cells: cells}
}

// diffText is the diff shown, as text.
func (c *changesPanel) diffText() string { return c.diff.Text() }
