package session

import (
	"context"
	"fmt"

	"sandbar/app/net/hosttrust"
	"sandbar/app/store"
)

// HostTrust finds the CA certificates this machine trusts beyond the
// stock bundle; hosttrust.Source is the real one.
type HostTrust interface {
	Collect(ctx context.Context) (hosttrust.Result, error)
}

var _ HostTrust = hosttrust.Source{}

// HostCerts is what a session carries of this machine's trust.
type HostCerts struct {
	// On says whether sessions carry them (Settings; on unless turned
	// off).
	On bool
	hosttrust.Result
}

// HostCertsOn reads the setting: on unless it is "off".
func (m *Manager) HostCertsOn(ctx context.Context) (bool, error) {
	v, _, err := m.cfg.Store.Setting(ctx, store.SettingHostCerts)
	return v != "off", err
}

// SetHostCertsOn turns carrying this machine's certificates into new
// sessions on or off; it applies from the next start.
func (m *Manager) SetHostCertsOn(ctx context.Context, on bool) error {
	v := "on"
	if !on {
		v = "off"
	}
	return m.cfg.Store.SetSetting(ctx, store.SettingHostCerts, v)
}

// HostCerts reads the setting and this machine's certificates, as a
// session started now would carry them (none found when no HostTrust is
// configured). It reads them even when off, to show what would be.
func (m *Manager) HostCerts(ctx context.Context) (HostCerts, error) {
	on, err := m.HostCertsOn(ctx)
	if err != nil {
		return HostCerts{}, err
	}
	hc := HostCerts{On: on}
	if m.cfg.HostTrust != nil {
		hc.Result, err = m.cfg.HostTrust.Collect(ctx)
	}
	return hc, err
}

// hostCAs adds this machine's certificates to what the guest trusts,
// unless the setting is off, with a line for the session's log about
// each one carried and each one skipped. A failure to read them is a
// line too: the session starts with what it has.
func (m *Manager) hostCAs(ctx context.Context, a *agentSetup) {
	if m.cfg.HostTrust == nil {
		return
	}
	hc, err := m.HostCerts(ctx)
	switch {
	case err != nil && !hc.On:
		a.notes = append(a.notes, "trust: "+err.Error())
		return
	case !hc.On:
		a.notes = append(a.notes, "trust: this machine's certificates are not carried into sessions (off in Settings → Network, or `sandbar net certs on`)")
		return
	case err != nil:
		a.notes = append(a.notes, "trust: this machine's certificates could not be read, none is carried: "+err.Error())
	}
	for _, s := range hc.Skipped {
		a.notes = append(a.notes, "trust: not carried: "+s.String())
	}
	for _, c := range hc.Certs {
		a.notes = append(a.notes, fmt.Sprintf("trust: carrying a certificate this machine trusts: %s (SHA-256 %s)", c.Subject, c.SHA256))
	}
	a.caPEM += hc.PEM()
}
