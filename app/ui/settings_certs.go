package ui

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/net/hosttrust"
	"sandbar/app/store"
)

// KeyHostCerts is the setting that keeps this machine's certificates out
// of sessions when "off".
const KeyHostCerts = string(store.SettingHostCerts)

// certsSection is Settings → Network's part about this machine's trust:
// whether sessions carry the certificates it trusts beyond the stock
// bundle, and which those are (subject and SHA-256 fingerprint).
type certsSection struct {
	check  *widget.Check
	list   *widget.Label
	status *widget.Label
	// settingUp: the check is being set from the backend, not by a person.
	settingUp bool
	loaded    bool
}

func (w *settingsWindow) certsBox() fyne.CanvasObject {
	c := &certsSection{list: note(""), status: statusLabel()}
	w.certs = c
	c.check = widget.NewCheck("Sessions trust the certificates this machine trusts (a company's network, a private CA)", func(on bool) {
		if !c.settingUp {
			w.setHostCerts(on)
		}
	})
	c.check.Disable() // until read
	return container.NewVBox(widget.NewSeparator(), c.check,
		note("Only the certificates travel, never a private key. A change applies from the next start."), c.list, c.status)
}

// loadCerts reads the setting and the certificates this machine trusts.
func (w *settingsWindow) loadCerts() {
	s, c := w.u.Settings, w.certs
	if s == nil || c == nil {
		return
	}
	w.u.background(func(ctx context.Context) {
		v, _, err := s.Setting(ctx, KeyHostCerts)
		var res hosttrust.Result
		if err == nil {
			res, err = s.HostCerts(ctx)
		}
		w.u.post(func() {
			if err != nil {
				setStatus(c.status, widget.DangerImportance, sentence(err.Error()))
			}
			c.list.SetText(describeCerts(res))
			c.settingUp = true
			c.check.SetChecked(v != "off")
			c.settingUp = false
			c.check.Enable()
			c.loaded = true
		})
	})
}

// describeCerts lists the certificates, one a line, then what was left
// out and why.
func describeCerts(res hosttrust.Result) string {
	if len(res.Certs) == 0 && len(res.Skipped) == 0 {
		return "This machine trusts no certificate beyond the stock ones."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This machine trusts %d beyond the stock ones:", len(res.Certs))
	for _, c := range res.Certs {
		fmt.Fprintf(&b, "\n%s — SHA-256 %s", c.Subject, c.SHA256)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(&b, "\nNot carried: %s", s)
	}
	return b.String()
}

// setHostCerts saves whether sessions carry this machine's certificates.
func (w *settingsWindow) setHostCerts(on bool) {
	c := w.certs
	v := "on"
	if !on {
		v = "off"
	}
	w.u.background(func(ctx context.Context) {
		err := w.u.Settings.SetSetting(ctx, KeyHostCerts, v)
		w.u.post(func() {
			if err != nil {
				setStatus(c.status, widget.DangerImportance, sentence(err.Error()))
				c.settingUp = true
				c.check.SetChecked(!on)
				c.settingUp = false
				return
			}
			msg := "Saved: sessions started from now on trust them."
			if !on {
				msg = "Saved: sessions started from now on do not trust them; running sessions keep what they have."
			}
			setStatus(c.status, widget.SuccessImportance, msg)
		})
	})
}
