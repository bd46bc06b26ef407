package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// tableColumns lays a row of the session list out as a table's, the
// header with the same layout so the two line up. A column with a sample
// text is as wide as that text needs in a label (numbers: uptime, CPU,
// memory), so what it shows is never cut; the other columns share what
// is left by their weights, and truncate.
type tableColumns []tableColumn

type tableColumn struct {
	weight float32 // share of the room the sized columns leave
	sample string  // the widest text the column shows; "" for a weighted column
}

// sessionColumns are the session list's: title (project · branch
// beneath), state, changes (where they went beneath), age (uptime
// beneath), CPU and memory. State is as wide as the longest state in words, so that a
// state is never cut (sessionStatus's; a longer one truncates).
var sessionColumns = tableColumns{
	{weight: 1},
	{sample: "stopped when Sandbar quit"},
	{sample: "+99999 –99999, 999 files"},
	{sample: "999 days ago"},
	{sample: "1600%"},
	{sample: "1023.9 MiB / 1023.9 MiB"},
}

// width is what column i takes: its sample's width in a label, or 0 for
// a weighted column.
func (c tableColumns) width(i int) float32 {
	if i >= len(c) || c[i].sample == "" {
		return 0
	}
	// A label draws its text between two inner paddings.
	t := fyne.MeasureText(c[i].sample, theme.TextSize(), fyne.TextStyle{})
	return t.Width + 2*theme.InnerPadding()
}

func (c tableColumns) weight(i int) float32 {
	if i >= len(c) {
		return 1
	}
	return c[i].weight
}

func (c tableColumns) MinSize(objects []fyne.CanvasObject) fyne.Size {
	var w, h float32
	for i, o := range objects {
		ms := o.MinSize()
		w += max(ms.Width, c.width(i))
		h = max(h, ms.Height)
	}
	return fyne.NewSize(w+theme.Padding()*float32(max(len(objects)-1, 0)), h)
}

func (c tableColumns) Layout(objects []fyne.CanvasObject, size fyne.Size) {
	pad := theme.Padding()
	free := size.Width - pad*float32(max(len(objects)-1, 0))
	var total float32
	for i := range objects {
		free -= c.width(i)
		total += c.weight(i)
	}
	free = max(free, 0)
	x := float32(0)
	for i, o := range objects {
		w := c.width(i)
		if w == 0 && total > 0 {
			w = free * c.weight(i) / total
		}
		o.Move(fyne.NewPos(x, 0))
		o.Resize(fyne.NewSize(w, size.Height))
		x += w + pad
	}
}
