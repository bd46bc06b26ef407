package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sandbar/app/config"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// sessionMeta is what a session's folder keeps of its record
// (config.SessionDir.Meta): enough to adopt the session back, with its
// title, project and branch, when the database lost its row. Only the
// host writes it; the guest has no way into the session's folder (its
// disks are images, nothing of the folder is shared with it). It is read
// as untrusted all the same: bounded, a regular file, checked.
type sessionMeta struct {
	ID          string       `json:"id"`
	ProjectID   int64        `json:"project_id"`
	ProjectPath string       `json:"project_path"`
	Title       string       `json:"title,omitempty"`
	Branch      string       `json:"branch"`
	Base        string       `json:"base,omitempty"`
	Prompt      string       `json:"prompt,omitempty"`
	Agent       store.Agent  `json:"agent"`
	Limits      store.Limits `json:"limits"`
	Created     time.Time    `json:"created"`
}

// maxMetaFile bounds session.json (a prompt may be long).
const maxMetaFile = 1 << 20

// writeMeta records s's metadata in its folder, atomically: a reader
// finds the old file or the new one, never half of one.
func writeMeta(dir config.SessionDir, s store.Session, projectPath string) error {
	b, err := json.Marshal(sessionMeta{ID: s.ID, ProjectID: s.ProjectID, ProjectPath: projectPath, Title: s.Title, Branch: s.Branch,
		Base: s.Base, Prompt: s.Prompt, Agent: s.Agent, Limits: s.Limits, Created: s.Created})
	if err != nil {
		return fmt.Errorf("record session %s in its folder: %w", s.ID, err)
	}
	f, err := os.CreateTemp(dir.Path(), ".session-*.json")
	if err != nil {
		return fmt.Errorf("record session %s in its folder: %w", s.ID, err)
	}
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), dir.Meta())
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("record session %s in its folder: %w", s.ID, werr)
	}
	return nil
}

// refreshMeta rewrites s's metadata after a change to its record (a
// rename); a failure is logged, not returned: the record itself changed.
func (m *Manager) refreshMeta(ctx context.Context, s store.Session) {
	dir := m.cfg.Paths.SessionDir(s.ID)
	if _, err := os.Lstat(dir.Meta()); err != nil {
		return // a session from before session.json, or one without a folder
	}
	p, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err == nil {
		err = writeMeta(dir, s, p.Path)
	}
	if err != nil {
		m.log.Warn("refresh the session's record in its folder", "session", s.ID, "err", err)
	}
}

// readMeta reads a session folder's metadata; ok is false when there is
// none. A file that is not what Sandbar writes is an error.
func readMeta(dir config.SessionDir) (meta sessionMeta, ok bool, err error) {
	f, err := os.OpenFile(dir.Meta(), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return meta, false, nil
	}
	if err != nil {
		return meta, false, fmt.Errorf("read %s: %w", dir.Meta(), err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return meta, false, fmt.Errorf("%s is not a regular file", dir.Meta())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMetaFile+1))
	if err != nil {
		return meta, false, fmt.Errorf("read %s: %w", dir.Meta(), err)
	}
	if len(b) > maxMetaFile {
		return meta, false, fmt.Errorf("%s is over %d bytes", dir.Meta(), maxMetaFile)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return meta, false, fmt.Errorf("%s does not parse: %w", dir.Meta(), err)
	}
	if meta.ID != dir.ID() {
		return meta, false, fmt.Errorf("%s names session %q, not %s", dir.Meta(), meta.ID, dir.ID())
	}
	if t, err := CleanTitle(meta.Title); err != nil {
		meta.Title = ""
	} else {
		meta.Title = t
	}
	if meta.Branch != "sandbar/"+meta.ID {
		meta.Branch = "sandbar/" + meta.ID
	}
	return meta, true, nil
}

// RecoveredReason is the reason of a session the engine adopted back.
const RecoveredReason = "recovered: Sandbar's database had lost this session; it was adopted back from its folder and its saved work on disk"

// heal adopts back the sessions the database lost: each folder under
// sessions/ and each session with saved refs in a project's repository
// that has no row (not even in the trash) gets one again, from its
// session.json where there is one, marked recovered. It removes the
// half-taken saves (save.partial) that no save of a live process is
// writing. It returns the ids it adopted. What cannot be adopted (no
// project can be told) is logged and left as it is on disk.
func (m *Manager) heal(ctx context.Context) ([]string, error) {
	known, err := m.cfg.Store.SessionIDs(ctx)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(m.cfg.Paths.Sessions())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list %s: %w", m.cfg.Paths.Sessions(), err)
	}
	projects, err := m.cfg.Store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	// Which project's repository holds saved refs of which session.
	savedIn := map[string]int64{}
	for _, p := range projects {
		if _, err := os.Lstat(m.cfg.Paths.ProjectRepo(p.ID)); err != nil {
			continue
		}
		mr := &workspace.Mirror{Dir: m.cfg.Paths.ProjectRepo(p.ID)}
		ids, err := mr.SessionIDs(ctx)
		if err != nil {
			m.log.Warn("list the saved sessions of a project", "project", p.ID, "err", err)
			continue
		}
		for _, id := range ids {
			if !known[id] {
				savedIn[id] = p.ID
			}
		}
	}
	var adopted []string
	folders := map[string]bool{}
	for _, e := range ents {
		id := e.Name()
		if !e.IsDir() || strings.HasPrefix(id, ".") {
			continue
		}
		folders[id] = true
		m.mu.Lock()
		_, starting := m.starting[id]
		m.mu.Unlock()
		if starting {
			continue // a Start records it in a moment
		}
		m.dropSpool(ctx, id, known[id])
		if known[id] {
			continue
		}
		ok, err := m.adopt(ctx, id, savedIn[id], projects)
		if err != nil {
			return adopted, err
		}
		if ok {
			adopted = append(adopted, id)
		}
	}
	for id, pid := range savedIn {
		if folders[id] {
			continue
		}
		ok, err := m.adopt(ctx, id, pid, projects)
		if err != nil {
			return adopted, err
		}
		if ok {
			adopted = append(adopted, id)
		}
	}
	if len(adopted) > 0 {
		if err := m.cfg.Store.NoteRecovered(ctx, adopted, time.Now()); err != nil {
			return adopted, err
		}
	}
	return adopted, nil
}

// dropSpool removes session id's save.partial unless a save may be
// writing it: one of this process's runs, or a live owner's elsewhere.
func (m *Manager) dropSpool(ctx context.Context, id string, known bool) {
	if m.running(id) != nil {
		return
	}
	if known {
		if s, err := m.cfg.Store.Session(ctx, id); err == nil && Live(s.State) && ownerAlive(s.Owner) && !sameOwner(s.Owner, m.owner) {
			return
		}
	}
	spool := m.cfg.Paths.SessionDir(id).SaveSpool()
	if err := os.Remove(spool); err == nil {
		m.log.Info("removed a half-taken save", "session", id, "file", spool)
	} else if !errors.Is(err, fs.ErrNotExist) {
		m.log.Warn("remove a half-taken save", "session", id, "err", err)
	}
}

// adopt records session id again, from its folder's session.json when
// there is one, else from its saved refs in project savedIn's repository
// (0: none). It reports false, having changed nothing, when no project
// can be told or the id is not one Sandbar makes.
func (m *Manager) adopt(ctx context.Context, id string, savedIn int64, projects []store.Project) (bool, error) {
	if !validID(id) {
		m.log.Warn("a folder under sessions/ that is no session's: left as it is", "folder", id)
		return false, nil
	}
	dir := m.cfg.Paths.SessionDir(id)
	meta, hasMeta, err := readMeta(dir)
	if err != nil {
		m.log.Warn("a lost session's record in its folder is unreadable: adopted from what else is on disk", "session", id, "err", err)
	}
	var proj int64
	if hasMeta {
		for _, p := range projects {
			if p.ID == meta.ProjectID && p.Path == meta.ProjectPath {
				proj = p.ID
			}
		}
		for _, p := range projects {
			if proj == 0 && p.Path == meta.ProjectPath {
				proj = p.ID
			}
		}
	}
	if proj == 0 {
		proj = savedIn
	}
	if proj == 0 {
		m.log.Warn("a lost session whose project cannot be told (no session.json naming a known project, no saved work): left on disk", "session", id, "folder", dir.Path())
		return false, nil
	}
	now := time.Now()
	s := store.Session{ID: id, ProjectID: proj, Branch: "sandbar/" + id, State: StateStopped, Reason: RecoveredReason,
		Agent: store.Agent{Kind: string(AgentClaude)}, Timings: map[string]time.Duration{}, Created: now, Ended: now}
	if hasMeta {
		s.Title, s.Base, s.Prompt, s.Agent, s.Limits, s.Created = meta.Title, meta.Base, meta.Prompt, meta.Agent, meta.Limits, meta.Created
	} else if fi, err := os.Stat(dir.Path()); err == nil {
		s.Created = fi.ModTime()
	}
	if s.Title == "" {
		s.Title = TitleFor(s.Prompt, s.Agent, id)
	}
	if in := m.inspect(id); in.Scratch != nil {
		// Its disk is there: a restart goes on where it was.
		s.State = StateInterrupted
		s.Reason = RecoveredReason + ": restart it to go on, or merge its saved work"
	} else {
		s.Reason = RecoveredReason + ": merge its saved work, or remove it"
	}
	s.Started = s.Created
	if err := m.cfg.Store.CreateSession(ctx, s); err != nil {
		if errors.Is(err, store.ErrExists) {
			return false, nil
		}
		if errors.Is(err, store.ErrNotFound) {
			m.log.Warn("adopt a lost session", "session", id, "err", err)
			return false, nil
		}
		return false, err
	}
	m.cfg.Store.AppendEvent(ctx, id, store.Event{Time: now, Kind: "state", Detail: string(s.State) + ": " + s.Reason})
	m.publishState(s)
	m.log.Info("adopted a session the database had lost", "session", id, "project", proj, "from_folder", hasMeta)
	return true, nil
}

// validID reports whether id is a session id as Sandbar makes them (and
// as a ref name and a folder name may hold).
func validID(id string) bool {
	if id == "" || len(id) > 64 || filepath.Base(id) != id {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Lost reports whether a session folder holds a session.json whose
// session the database does not know: what the engine's healing would
// adopt. A process that is not the engine, finding one, reaches the
// engine (which heals at start) rather than adopting it itself.
func (m *Manager) Lost(ctx context.Context) bool {
	ents, err := os.ReadDir(m.cfg.Paths.Sessions())
	if err != nil {
		return false
	}
	var known map[string]bool
	for _, e := range ents {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		if fi, err := os.Lstat(m.cfg.Paths.SessionDir(e.Name()).Meta()); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if known == nil {
			if known, err = m.cfg.Store.SessionIDs(ctx); err != nil {
				return false
			}
		}
		if !known[e.Name()] {
			return true
		}
	}
	return false
}
