package ui

import (
	"sync"
	"time"

	"sandbar/app/store"
)

// mergeNote is a merge done through this app: the commit the session's
// branch went in at, and when the session had ended then (zero: it was
// live).
type mergeNote struct {
	commit string
	ended  time.Time
}

// merges remembers the merges done through this app's windows and tray,
// so that the tray offers no Merge on a session that has nothing more to
// merge. It knows nothing of merges made by the CLI or another app: the
// store has no merged state yet (issue 16's "merged state" item).
type merges struct {
	mu sync.Mutex
	m  map[string]mergeNote
}

// note records that s, as it was when merged, went in at commit.
func (r *merges) note(s store.Session, commit string) {
	if s.ID == "" || commit == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]mergeNote{}
	}
	r.m[s.ID] = mergeNote{commit: commit, ended: s.Ended}
}

func (r *merges) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

// all is a copy of what r holds, by session id.
func (r *merges) all() map[string]mergeNote {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]mergeNote, len(r.m))
	for id, n := range r.m {
		out[id] = n
	}
	return out
}
