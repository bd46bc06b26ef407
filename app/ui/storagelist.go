package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
)

// storageListRow is one row of a Storage tab list: its text columns, what it
// takes on disk (the last column), and what its button does.
type storageListRow struct {
	cells []string
	bytes int64
	tap   func()
}

// newStorageList is a Storage tab list (the trash, the environments):
// text columns cut with an ellipsis at the given weights, then the size,
// and one button a row at the end. row is read for each shown row.
func newStorageList(n func() int, weights columns, button string, icon fyne.Resource, row func(i int) storageListRow) *widget.List {
	return widget.NewList(
		n,
		func() fyne.CanvasObject {
			cells := make([]fyne.CanvasObject, 0, len(weights))
			for range len(weights) - 1 {
				l := widget.NewLabel("")
				l.Truncation = fyne.TextTruncateEllipsis
				cells = append(cells, l)
			}
			cells = append(cells, widget.NewLabel("")) // the size
			return container.NewBorder(nil, nil, nil, widget.NewButtonWithIcon(button, icon, nil), container.New(weights, cells...))
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= n() {
				return
			}
			r := row(i)
			c := o.(*fyne.Container)
			cells := c.Objects[0].(*fyne.Container).Objects
			for j, text := range r.cells {
				if j < len(cells)-1 {
					cells[j].(*widget.Label).SetText(text)
				}
			}
			cells[len(cells)-1].(*widget.Label).SetText(doctor.HumanBytes(r.bytes))
			c.Objects[1].(*widget.Button).OnTapped = r.tap
		})
}
