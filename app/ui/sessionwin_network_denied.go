package ui

import (
	"fmt"
	"image/color"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// destText is a destination as "host:port", with "/udp" for UDP.
func destText(a store.NetAttempt) string {
	host := a.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	d := host + ":" + strconv.Itoa(a.Port)
	switch a.Proto {
	case string(policy.UDP):
		d += "/udp"
	case session.ProtoWrite:
		d += " (write)"
	}
	return d
}

// allowRule is the rule an Allow adds for a: the exact name (else the
// address) with its port and protocol; Action "" when there is none.
func allowRule(a store.NetAttempt, src policy.Source) policy.Rule {
	if a.Proto == session.ProtoWrite {
		// A write refused on a read-only connection: Allow writes.
		r, err := session.WriteRule(a)
		if err != nil {
			return policy.Rule{}
		}
		return r
	}
	d := policy.Dest{Name: a.Host, Port: uint16(a.Port), Proto: policy.Proto(a.Proto)}
	if a.Port <= 0 || a.Port > 65535 {
		return policy.Rule{}
	}
	if addr, err := netip.ParseAddr(a.Addr); err == nil {
		d.Addr = addr
	}
	return policy.AllowRuleFor(d, src)
}

// timesText is how often and when last.
func timesText(a store.NetAttempt) string {
	n := "once"
	if a.Count > 1 {
		n = strconv.Itoa(a.Count) + " times"
	}
	when := a.Last.Local().Format("15:04:05")
	if time.Since(a.Last) > 20*time.Hour {
		when = a.Last.Local().Format("Jan 2 15:04")
	}
	return n + " · last " + when
}

// summaryText is the tab's first line: the mode and its rules.
func summaryText(sum session.NetSummary, s store.Session) string {
	m := policy.Mode(sum.Mode)
	if !s.Limits.Network {
		return "Off: the session runs without a network card."
	}
	if m == policy.ModeOff {
		return "Off: the settings deny every connection (a mode off line in Sandbar's, the project's or the repository's rules)."
	}
	text := modeWords(m)
	rules := fmt.Sprintf(" %d allow %s", sum.Allow, pluralWord(sum.Allow, "rule", "rules"))
	if sum.Session > 0 {
		rules += fmt.Sprintf(" (%d of this session's own)", sum.Session)
	}
	if sum.Deny > 0 {
		rules += fmt.Sprintf(", %d deny %s", sum.Deny, pluralWord(sum.Deny, "rule", "rules"))
	}
	return text + rules + "."
}

// deniedItem is one row of the denied list: the destination, how often
// and when, why (two lines at most, the rest in the detail below), and
// the Allow buttons.
type deniedItem struct {
	widget.BaseWidget
	p                      *netPanel
	row                    *deniedRow
	dest, meta, reason     *widget.Label
	forSession, forProject *widget.Button
	content                fyne.CanvasObject
}

func newDeniedItem(p *netPanel) *deniedItem {
	it := &deniedItem{p: p,
		dest:   widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		meta:   widget.NewLabel(""),
		reason: widget.NewLabel(""),
	}
	it.dest.Truncation = fyne.TextTruncateEllipsis
	it.meta.Importance = widget.LowImportance
	it.reason.Wrapping = fyne.TextWrapWord
	it.reason.Truncation = fyne.TextTruncateEllipsis
	it.forSession = widget.NewButton("Allow for this session", func() {
		if it.row != nil {
			p.allow(it.row, session.ScopeSession)
		}
	})
	it.forProject = widget.NewButton("Allow for this project", func() {
		if it.row != nil {
			p.allow(it.row, session.ScopeProject)
		}
	})
	// The reason takes two lines, however long it is: the row's height
	// is fixed, so no text sizes the list or the window.
	twoLines := canvas.NewRectangle(color.Transparent)
	twoLines.SetMinSize(fyne.NewSize(0, widget.NewLabel("1\n2").MinSize().Height))
	text := container.NewVBox(container.NewBorder(nil, nil, nil, it.meta, it.dest), container.NewStack(twoLines, it.reason))
	it.content = container.NewBorder(nil, nil, nil, vcenter(container.NewHBox(it.forSession, it.forProject)), text)
	it.ExtendBaseWidget(it)
	return it
}

func (it *deniedItem) set(r *deniedRow) {
	it.row = r
	a := r.a
	it.dest.SetText(displayLine(destText(a)))
	it.meta.SetText(timesText(a))
	reached, ok := it.p.reached[keyOf(a)]
	switch {
	case r.note != "":
		it.reason.Importance = r.noteImp
		it.reason.SetText(r.note)
	case ok && reached.After(a.Last):
		it.reason.Importance = widget.SuccessImportance
		it.reason.SetText("Allowed now: connected at " + reached.Local().Format("15:04:05") + ".")
	default:
		it.reason.Importance = widget.MediumImportance
		it.reason.SetText(sbwidget.ClipRunes(displayLine(a.Reason), 400))
	}
	if a.Proto == session.ProtoWrite {
		it.forSession.SetText("Allow writes for this session")
		it.forProject.SetText("Allow writes for this project")
	} else {
		it.forSession.SetText("Allow for this session")
		it.forProject.SetText("Allow for this project")
	}
	done := !r.allowedAt.IsZero() || ok && reached.After(a.Last)
	can := allowRule(a, policy.SourceSession).Action != ""
	for _, b := range []*widget.Button{it.forSession, it.forProject} {
		setEnabled(b, can && !r.busy && !done)
	}
}

// CreateRenderer implements fyne.Widget.
func (it *deniedItem) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(it.content)
}
