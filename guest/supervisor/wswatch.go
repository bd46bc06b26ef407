package supervisor

import (
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"sandbar/guest/protocol"
)

// Workspace watching: the clone lives on the VM's own disk, so only the
// guest can see it change. The supervisor watches it with inotify and
// tells the host, at most every watchQuiet, that something changed; the
// host then asks git for the details with an exec.
const (
	// watchQuiet is how long the workspace must be still before the host
	// is told: a build or a checkout is one notice, not thousands.
	watchQuiet = 300 * time.Millisecond
	// watchMaxDelay bounds the wait under constant change.
	watchMaxDelay = 2 * time.Second
	// maxWatches bounds the folders watched; past it, changes in the
	// folders left out are seen at the next notice from elsewhere.
	maxWatches = 200_000
)

// watchWorkspace runs until the session ends.
func (s *session) watchWorkspace(dir string) {
	// The kernel's default (8192 folders) is too few for a large
	// repository; root may raise it. Failing is not fatal.
	os.WriteFile("/proc/sys/fs/inotify/max_user_watches", []byte("524288"), 0)
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		s.log.Warn("cannot watch the workspace", "dir", dir, "err", err)
		return
	}
	defer w.Close()
	n := 0
	add := func(root string) {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			// Object files change only with a ref or the index, which
			// are watched.
			if d.Name() == "objects" && filepath.Base(filepath.Dir(p)) == ".git" {
				return filepath.SkipDir
			}
			if n >= maxWatches {
				return filepath.SkipAll
			}
			if w.Add(p) == nil {
				n++
			}
			return nil
		})
	}
	add(dir)
	if n >= maxWatches {
		s.log.Warn("the workspace has more folders than are watched", "watched", n)
	}

	var quiet, deadline <-chan time.Time
	var quietT *time.Timer
	for {
		select {
		case <-s.life.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					add(ev.Name)
				}
			}
			if quietT == nil {
				quietT = time.NewTimer(watchQuiet)
			} else {
				quietT.Reset(watchQuiet)
			}
			quiet = quietT.C
			if deadline == nil {
				deadline = time.After(watchMaxDelay)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflowed queue lost events: tell the host anyway.
			s.log.Debug("workspace watch", "err", err)
			if deadline == nil {
				deadline = time.After(watchQuiet)
			}
		case <-quiet:
			quiet, deadline = nil, nil
			s.emit(protocol.Event{Ev: protocol.EvWorkspace})
		case <-deadline:
			quiet, deadline = nil, nil
			s.emit(protocol.Event{Ev: protocol.EvWorkspace})
		}
	}
}
