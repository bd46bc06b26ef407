package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Keeping base disks fresh: the engine watches each project's refs (the
// person's repository, which only the person writes) and, when they have
// been still for refreshQuiet after a change, copies what is new into
// Sandbar's repository and builds the base disk of the checked-out commit,
// so the next session at that commit starts without waiting for it.
const refreshQuiet = 2 * time.Second

// WatchSources starts watching every project's repository, and each
// project added later: what the engine does (engine.Listen turns it on).
func (m *Manager) WatchSources(ctx context.Context) { m.watchSources(ctx) }

func (m *Manager) watchSources(ctx context.Context) {
	m.mu.Lock()
	m.watching = true
	m.mu.Unlock()
	ps, err := m.cfg.Store.Projects(ctx)
	if err != nil {
		m.log.Warn("list the projects to watch", "err", err)
		return
	}
	for _, p := range ps {
		m.watchSource(p)
	}
}

// watchSource starts watching a project's repository, once per project
// and engine. The watch ends with the Manager (Close) or the project.
func (m *Manager) watchSource(p store.Project) {
	m.mu.Lock()
	if !m.watching || m.closing || m.watched[p.ID] != nil {
		m.mu.Unlock()
		return
	}
	if m.watched == nil {
		m.watched = map[int64]context.CancelFunc{}
	}
	ctx, stop := context.WithCancel(m.life)
	m.watched[p.ID] = stop
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		defer stop()
		m.watchRefs(ctx, p)
	}()
}

// watchRefs runs until the Manager closes.
func (m *Manager) watchRefs(ctx context.Context, p store.Project) {
	log := m.log.With("project", p.Name)
	repo, err := workspace.Resolve(ctx, p.Path)
	if err != nil {
		log.Info("not watching the project's repository", "err", err)
		return
	}
	gitDir, common, err := workspace.GitDirs(ctx, repo)
	if err != nil {
		log.Info("not watching the project's repository", "err", err)
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("watch the project's repository", "err", err)
		return
	}
	defer w.Close()
	// HEAD and packed-refs sit in the git folders; branches under refs/heads.
	add := func(root string) {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				w.Add(p)
			}
			return nil
		})
	}
	w.Add(gitDir)
	w.Add(common)
	add(filepath.Join(common, "refs", "heads"))
	// The repository may have moved on while no engine watched it.
	quiet := time.After(0)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			name := filepath.Base(ev.Name)
			if strings.HasSuffix(name, ".lock") || (filepath.Dir(ev.Name) == common || filepath.Dir(ev.Name) == gitDir) &&
				name != "HEAD" && name != "packed-refs" {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					add(ev.Name)
				}
			}
			quiet = time.After(refreshQuiet)
		case <-w.Errors:
		case <-quiet:
			quiet = nil
			m.refreshBase(ctx, p)
		}
	}
}

// refreshBase brings the project's new history into Sandbar's repository
// and builds the base disk of the repository's current commit.
func (m *Manager) refreshBase(ctx context.Context, p store.Project) {
	start := time.Now()
	repo, err := workspace.Resolve(ctx, p.Path)
	if err != nil {
		return
	}
	mr, unlock, err := m.mirror(ctx, p.ID)
	if err != nil {
		m.log.Warn("refresh the project's base disk", "project", p.Name, "err", err)
		return
	}
	defer unlock()
	commit, err := mr.Fetch(ctx, repo, "", nil)
	if err == nil {
		var info workspace.BaseInfo
		// The disk a session will use: with the include lists the
		// person trusted, and none else.
		var lists []byte
		if rev, rerr := m.repoReview(ctx, p, repo.Root); rerr == nil {
			lists = rev.IncludeLists()
		}
		info, err = mr.BuildBase(ctx, workspace.BaseOptions{Source: repo, Commit: commit, Dir: m.cfg.Paths.ProjectBases(p.ID), IncludeLists: lists})
		if err == nil && !info.Reused {
			m.log.Info("base disk ready", "project", p.Name, "commit", short(commit), "took", time.Since(start).Round(time.Millisecond))
			m.pruneBases(ctx, p.ID)
		}
	}
	if err != nil && ctx.Err() == nil {
		m.log.Warn("refresh the project's base disk", "project", p.Name, "err", err)
	}
}
