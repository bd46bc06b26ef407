package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// TestMemoryColumnHoldsItsText: the widest memory a row shows is drawn
// whole, at the Sandbar window's first size and narrower, in line with
// its header.
func TestMemoryColumnHoldsItsText(t *testing.T) {
	h := newAppHarness(t)
	h.addProject(t, "demo")
	mw := h.mainWindow(t)
	const mem = "1023.9 MiB / 1023.9 MiB"
	for _, width := range []float32{760, 600} {
		mw.win.Resize(fyne.NewSize(width, 560))
		listW := mw.sessionList.Size().Width
		it := newSessionItem(mw)
		it.set("s1", sessionCells{project: "a-project-with-a-long-name", branch: "sandbar/0123456789",
			state: "waiting for input", uptime: "99d 23h", cpu: "1600%", mem: mem})
		row := test.NewWindow(it)
		row.SetPadded(false)
		row.Resize(fyne.NewSize(listW, it.MinSize().Height))
		if need := widget.NewLabel(mem).MinSize().Width; it.mem.Size().Width < need {
			t.Errorf("in a %.0f-wide window the Memory column is %.0f wide: %q needs %.0f", width, it.mem.Size().Width, mem, need)
		}
		hdr := sessionHeader().(*fyne.Container)
		hdr.Resize(fyne.NewSize(listW, hdr.MinSize().Height))
		// Both are the columns beside the row's actions (withRowActions).
		columns := func(o fyne.CanvasObject) *fyne.Container { return o.(*fyne.Container).Objects[0].(*fyne.Container) }
		if hx, rx := columns(hdr).Objects[5].Position().X, columns(it.content).Objects[5].Position().X; hx != rx {
			t.Errorf("the Memory header is at %.0f, its column at %.0f", hx, rx)
		}
		row.Close()
	}
}
