package session

import (
	"context"
	"time"

	"sandbar/app/store"
)

// Rename gives session ref a new title, which every window, the tray and
// the CLI show from then on. An empty title makes one from the prompt
// again; one longer than MaxTitle is refused (ErrBadOptions) and nothing
// changes. Any session may be renamed, running or not.
func (m *Manager) Rename(ctx context.Context, ref, title string) (store.Session, error) {
	t, err := CleanTitle(title)
	if err != nil {
		return store.Session{}, err
	}
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return store.Session{}, err
	}
	if t == "" {
		t = TitleFor(s.Prompt, s.Agent, s.ID)
	}
	s, err = m.cfg.Store.UpdateSession(ctx, s.ID, func(x *store.Session) error {
		x.Title = t
		return nil
	})
	if err != nil {
		return s, err
	}
	m.refreshMeta(ctx, s)
	m.cfg.Store.AppendEvent(ctx, s.ID, store.Event{Time: time.Now(), Kind: "title", Detail: t})
	m.hub.publish(Event{Session: s.ID, Time: time.Now(), Kind: EventTitle, Title: t})
	return s, nil
}
