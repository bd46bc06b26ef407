package ui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/net/netstack"
	"sandbar/app/session"
	"sandbar/app/store"
)

// The Network tab's published ports: the guest's ports reachable on this
// machine's 127.0.0.1, each with Open (the browser) and Unpublish, and a
// field to publish one by hand.

// portsPane makes the ports' half of the tab.
func (p *netPanel) portsPane() fyne.CanvasObject {
	p.portList = widget.NewList(
		func() int { return len(p.ports) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			open := widget.NewButtonWithIcon("Open", theme.ComputerIcon(), nil)
			unpub := widget.NewButtonWithIcon("Unpublish", theme.ContentRemoveIcon(), nil)
			unpub.Importance = widget.LowImportance
			return container.NewBorder(nil, nil, nil, container.NewHBox(open, unpub), l)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= len(p.ports) {
				return
			}
			port := p.ports[i]
			c := o.(*fyne.Container)
			c.Objects[0].(*widget.Label).SetText(portText(port))
			btns := c.Objects[1].(*fyne.Container).Objects
			btns[0].(*widget.Button).OnTapped = func() { p.open(port) }
			btns[1].(*widget.Button).OnTapped = func() { p.unpublish(port.Guest) }
		})
	p.portsNote = note("")
	p.guestPort = newEntry()
	p.guestPort.SetPlaceHolder("guest port")
	p.guestPort.OnSubmitted = func(string) { p.doPublish() }
	p.publish = widget.NewButtonWithIcon("Publish", theme.ContentAddIcon(), p.doPublish)
	p.portsStatus = statusLabel()

	portWidth := widget.NewLabel("guest port 65535").MinSize().Width
	publishRow := container.NewHBox(container.NewGridWrap(fyne.NewSize(portWidth, p.guestPort.MinSize().Height), p.guestPort), p.publish)
	return container.NewBorder(container.NewBorder(nil, nil, heading("Published ports"), publishRow),
		p.portsStatus, nil, nil, container.NewStack(p.portList, container.NewVBox(p.portsNote)))
}

// portText is a published port as the tab lists it: the address Open
// opens (an origin of the session's own, see netstack.Port.URL). The
// arrow is U+27F6: Fyne 2.8 draws U+2192 followed by a space as a
// replacement character.
func portText(p netstack.Port) string {
	return fmt.Sprintf("%s (guest port %d)", portURL(p), p.Guest)
}

// portURL is where Open goes: the port's own origin, or (a port from an
// engine older than origins) the loopback's address.
func portURL(p netstack.Port) string {
	if p.URL != "" {
		return p.URL
	}
	return fmt.Sprintf("http://127.0.0.1:%d/", p.Host)
}

// setSession follows the session's state: ports exist while it runs.
func (p *netPanel) setSession(s store.Session, wasRunning bool) {
	running := s.State == session.StateRunning
	setEnabled(p.publish, running && s.Limits.Network)
	if running && !wasRunning && p.loaded {
		p.reloadSoon() // its network is new: its ports, its rules
	}
	if !running && len(p.ports) > 0 {
		p.ports = nil
		p.portList.Refresh()
	}
	p.setPortsNote()
}

// setPorts shows the published ports; err is why they could not be read.
func (p *netPanel) setPorts(ports []netstack.Port, err error) {
	switch {
	case err == nil:
		p.ports = slices.Clone(ports)
		slices.SortFunc(p.ports, func(a, b netstack.Port) int { return int(a.Guest) - int(b.Guest) })
	case errors.Is(err, session.ErrState), errors.Is(err, session.ErrNoNetwork), p.w.sess.State != session.StateRunning:
		p.ports = nil
	default:
		p.ports = nil
		setStatus(p.portsStatus, widget.DangerImportance, "Cannot read the published ports: "+sentence(err.Error()))
	}
	p.portList.Refresh()
	p.setPortsNote()
}

// setPortsNote says why the list is empty, if it is.
func (p *netPanel) setPortsNote() {
	s := p.w.sess
	var text string
	switch {
	case !s.Limits.Network:
		text = "The session runs without a network: no port can be published."
	case s.State != session.StateRunning:
		text = "None: ports are published while the session runs."
	case len(p.ports) == 0:
		text = "None yet: a port the guest listens on shows here once it is published on this machine's 127.0.0.1."
	}
	p.portsNote.SetText(text)
	if text == "" {
		p.portsNote.Hide()
	} else {
		p.portsNote.Show()
	}
}

// open opens a published port in the browser with the desktop's opener.
func (p *netPanel) open(port netstack.Port) {
	url := portURL(port)
	o := urlOpener(url, p.look)
	if o.missing != "" {
		p.w.noBrowser(url, o.missing)
		return
	}
	setStatus(p.portsStatus, widget.MediumImportance, "")
	p.w.launch(o)
}

// doPublish publishes the guest port typed.
func (p *netPanel) doPublish() {
	n, err := strconv.ParseUint(strings.TrimSpace(p.guestPort.Text), 10, 16)
	if err != nil || n == 0 {
		setStatus(p.portsStatus, widget.DangerImportance, "Type a guest port, a number from 1 to 65535.")
		return
	}
	p.publish.Disable()
	p.w.spawn(func(ctx context.Context) {
		port, err := p.w.u.Backend.PublishPort(ctx, p.w.id, uint16(n), 0)
		if ctx.Err() != nil {
			return
		}
		p.w.ui(func() {
			setEnabled(p.publish, p.w.sess.State == session.StateRunning && p.w.sess.Limits.Network)
			if err != nil {
				setStatus(p.portsStatus, widget.DangerImportance, "Not published: "+sentence(err.Error()))
				return
			}
			p.guestPort.SetText("")
			setStatus(p.portsStatus, widget.SuccessImportance, "Published: "+portText(port)+".")
			if !slices.Contains(p.ports, port) {
				p.setPorts(append(p.ports, port), nil)
			}
		})
	})
}

// unpublish closes a published port.
func (p *netPanel) unpublish(guest uint16) {
	p.w.spawn(func(ctx context.Context) {
		err := p.w.u.Backend.UnpublishPort(ctx, p.w.id, guest)
		if ctx.Err() != nil {
			return
		}
		p.w.ui(func() {
			if err != nil {
				setStatus(p.portsStatus, widget.DangerImportance, "Not unpublished: "+sentence(err.Error()))
				return
			}
			setStatus(p.portsStatus, widget.MediumImportance, fmt.Sprintf("Guest port %d is no longer published.", guest))
			p.setPorts(slices.DeleteFunc(slices.Clone(p.ports), func(x netstack.Port) bool { return x.Guest == guest }), nil)
		})
	})
}
