package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"sandbar/app/config"
	"sandbar/app/store"
)

// DefaultTrashKeep is how long a deleted session stays in the trash.
const DefaultTrashKeep = 7 * 24 * time.Hour

// trashCheck is how often the engine empties what has been in the trash
// longer than TrashKeep.
const trashCheck = time.Hour

// Trashed is a session in the trash: deleted, restorable until Purge is
// due or the trash is emptied.
type Trashed struct {
	store.TrashedSession
	// Purge is when the trash lets go of it.
	Purge time.Time `json:"purge"`
	// Bytes is what its folder takes on disk.
	Bytes int64 `json:"bytes"`
}

// moveToTrash moves a stopped session's folder under the trash and marks
// its record deleted; its saved work stays in Sandbar's repository of the
// project until the trash is emptied.
func (m *Manager) moveToTrash(ctx context.Context, id string, dir config.SessionDir) error {
	at := m.cfg.Now()
	to := m.cfg.Paths.TrashedSessionDir(id, at)
	if err := os.MkdirAll(m.cfg.Paths.Trash(), 0o700); err != nil {
		return fmt.Errorf("make the trash: %w", err)
	}
	moved := true
	if err := os.Rename(dir.Path(), to.Path()); errors.Is(err, fs.ErrNotExist) {
		moved = false // a session whose folder is gone already
	} else if err != nil {
		return fmt.Errorf("move session %s to the trash: %w", id, err)
	}
	if err := m.cfg.Store.TrashSession(ctx, id, at); err != nil {
		if moved {
			os.Rename(to.Path(), dir.Path())
		}
		return err
	}
	m.log.Info("session moved to the trash", "session", id, "dir", to.Path())
	return nil
}

// Trash lists the sessions in the trash, the most recently deleted first.
func (m *Manager) Trash(ctx context.Context) ([]Trashed, error) {
	ts, err := m.cfg.Store.Trashed(ctx)
	if err != nil {
		return nil, err
	}
	sizes, err := sessionDiskUsage(ctx, m.cfg.Paths.Trash())
	if err != nil {
		return nil, err
	}
	out := make([]Trashed, len(ts))
	for i, t := range ts {
		dir := m.cfg.Paths.TrashedSessionDir(t.ID, t.Deleted)
		out[i] = Trashed{TrashedSession: t, Purge: t.Deleted.Add(m.cfg.TrashKeep), Bytes: sizes[filepath.Base(dir.Path())]}
	}
	return out, nil
}

// Restore takes a session out of the trash: its folder, record, logs and
// transcript come back as they were when it was deleted, and so does its
// state (a session in the trash never runs).
func (m *Manager) Restore(ctx context.Context, ref string) (store.Session, error) {
	t, err := m.cfg.Store.FindTrashed(ctx, ref)
	if err != nil {
		return store.Session{}, err
	}
	from := m.cfg.Paths.TrashedSessionDir(t.ID, t.Deleted)
	to := m.cfg.Paths.SessionDir(t.ID)
	if _, err := os.Lstat(to.Path()); err == nil {
		return store.Session{}, fmt.Errorf("restore session %s: %s is in the way: move it aside and try again", t.ID, to.Path())
	}
	moved := true
	if err := os.Rename(from.Path(), to.Path()); errors.Is(err, fs.ErrNotExist) {
		moved = false
	} else if err != nil {
		return store.Session{}, fmt.Errorf("restore session %s: %w", t.ID, err)
	}
	s, err := m.cfg.Store.RestoreSession(ctx, t.ID)
	if err != nil {
		if moved {
			os.Rename(to.Path(), from.Path())
		}
		return store.Session{}, err
	}
	if s.Reason == ReasonRemoved {
		// Deleted while it ran: back from the trash it is a session the
		// person stopped, not one that is "removed" (sandbar ls).
		if back, err := m.cfg.Store.UpdateSession(ctx, s.ID, func(x *store.Session) error {
			x.Reason = ReasonStoppedByUser
			return nil
		}); err != nil {
			m.log.Warn("clear the removed reason of a restored session", "session", s.ID, "err", err)
		} else {
			s = back
		}
	}
	m.log.Info("session restored from the trash", "session", s.ID)
	m.publishState(s)
	return s, nil
}

// EmptyTrash deletes for good the sessions in the trash named by ids (all
// of them when ids is empty): their folders, records, logs and saved work
// in Sandbar's repository. It returns how many went.
func (m *Manager) EmptyTrash(ctx context.Context, ids []string) (int, error) {
	ts, err := m.cfg.Store.Trashed(ctx)
	if err != nil {
		return 0, err
	}
	var pick []store.TrashedSession
	if len(ids) == 0 {
		pick = ts
	} else {
		for _, ref := range ids {
			t, err := m.cfg.Store.FindTrashed(ctx, ref)
			if err != nil {
				return 0, err
			}
			if !slices.ContainsFunc(pick, func(x store.TrashedSession) bool { return x.ID == t.ID }) {
				pick = append(pick, t)
			}
		}
	}
	return m.purge(ctx, pick)
}

// expireTrash empties what has been in the trash longer than TrashKeep.
func (m *Manager) expireTrash(ctx context.Context) (int, error) {
	ts, err := m.cfg.Store.Trashed(ctx)
	if err != nil {
		return 0, err
	}
	due := m.cfg.Now().Add(-m.cfg.TrashKeep)
	ts = slices.DeleteFunc(ts, func(t store.TrashedSession) bool { return t.Deleted.After(due) })
	return m.purge(ctx, ts)
}

// purge deletes trashed sessions for good.
func (m *Manager) purge(ctx context.Context, ts []store.TrashedSession) (int, error) {
	var errs []error
	n := 0
	projects := map[int64]bool{}
	for _, t := range ts {
		if err := removeSessionDir(m.cfg.Paths.TrashedSessionDir(t.ID, t.Deleted)); err != nil {
			errs = append(errs, err)
			continue
		}
		if mr, unlock, err := m.mirror(ctx, t.ProjectID); err == nil {
			if err := mr.Forget(ctx, t.ID); err != nil {
				m.log.Warn("forget the session's saved work", "session", t.ID, "err", err)
			}
			unlock()
		}
		// The record goes last: while it is there, the rest may be too.
		if err := m.cfg.Store.DeleteSession(ctx, t.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		projects[t.ProjectID] = true
		n++
		m.log.Info("session deleted from the trash", "session", t.ID)
		m.hub.publish(Event{Session: t.ID, Time: time.Now(), Kind: EventPurged})
	}
	m.pruneEnvImages(ctx, m.cfg.Now())
	m.prunePrepared(ctx, m.cfg.Now())
	for p := range projects {
		if _, unlock, err := m.mirror(ctx, p); err == nil {
			m.pruneBases(ctx, p)
			unlock()
		}
	}
	return n, errors.Join(errs...)
}

// TendTrash empties the trash of what is due at once and then every hour,
// until the Manager closes or ctx is done: the engine's job
// (engine.Listen calls it), so that no client purges behind its back.
func (m *Manager) TendTrash(ctx context.Context) {
	m.loop(ctx, func(ctx context.Context) {
		t := time.NewTicker(trashCheck)
		defer t.Stop()
		for {
			if n, err := m.expireTrash(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("empty the trash", "err", err)
			} else if n > 0 {
				m.log.Info("emptied the trash of sessions deleted a week ago", "sessions", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// loop runs one of the engine's own jobs on a goroutine of its own, with
// a ctx that ends when the Manager closes or ctx does; Close waits for
// it. Nothing starts once the Manager is closing.
func (m *Manager) loop(ctx context.Context, job func(ctx context.Context)) {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(m.life, cancel)
		defer stop()
		job(ctx)
	}()
}

// trashedBaseDisks are the base disks the trashed sessions of a project
// boot on, which restoring them needs.
func (m *Manager) trashedBaseDisks(ctx context.Context, projectID int64) map[string]bool {
	used := map[string]bool{}
	ts, err := m.cfg.Store.Trashed(ctx)
	if err != nil {
		return used
	}
	for _, t := range ts {
		if t.ProjectID != projectID {
			continue
		}
		if in, err := Inspect(m.cfg.Paths.TrashedSessionDir(t.ID, t.Deleted)); err == nil && in.BaseDisk != "" {
			used[in.BaseDisk] = true
		}
	}
	return used
}
