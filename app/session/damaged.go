package session

import (
	"context"
	"fmt"

	"sandbar/app/store"
)

// ErrDamaged: the session's record in the database does not parse
// (store.Session.Damaged); reading it and removing it are all it takes.
var ErrDamaged = store.ErrDamaged

// findIntact finds session ref for a verb that acts on what its record
// says (its project, branch, state): a damaged record is refused in words
// that say what to do, not acted on with what could be read of it.
func (m *Manager) findIntact(ctx context.Context, ref string) (store.Session, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil || s.Damaged == "" {
		return s, err
	}
	return s, fmt.Errorf("session %s: its record in Sandbar's database is damaged (unreadable: %s), so Sandbar cannot tell its project, branch or state: "+
		"its saved work, if any, is still in Sandbar's repository (refs/sandbar/sessions/%s/); remove the record with `sandbar rm %s`: %w",
		s.ID, s.Damaged, s.ID, s.ID, ErrDamaged)
}

// removeDamaged removes a session whose record is damaged. Its work
// cannot be checked (its project is not known for sure), so it goes to
// the trash as a forced remove does, to be restored or emptied. A record
// whose id is not one Sandbar makes names no folder: only the record
// goes, for good.
func (m *Manager) removeDamaged(ctx context.Context, s store.Session) error {
	if !validID(s.ID) {
		if err := m.cfg.Store.DeleteSession(ctx, s.ID); err != nil {
			return err
		}
		m.log.Info("damaged session record deleted", "session", s.ID)
		return nil
	}
	if err := m.moveToTrash(ctx, s.ID, m.cfg.Paths.SessionDir(s.ID)); err != nil {
		return err
	}
	m.log.Info("damaged session record moved to the trash", "session", s.ID)
	return nil
}
