package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions tunes a Watcher.
type WatchOptions struct {
	// Debounce is how long the clone must be quiet before a burst of
	// changes is reported as one; 300ms if zero. A burst that never goes
	// quiet is still reported every ten Debounce periods.
	Debounce time.Duration
	// OnChange gets the clone's Status after each burst of changes. It is
	// called from the Watcher's own goroutine, one call at a time, and must
	// not call Close.
	OnChange func(Changes)
	// OnError gets what went wrong (a Status that failed, a folder that
	// could not be watched); the Watcher keeps going.
	OnError func(error)
	// Skip names more folders, at any depth, not to watch, on top of
	// node_modules, target, .venv, venv, __pycache__, dist, build, .gradle,
	// .next and .cache, and of the folders git ignores.
	Skip []string
}

// Watcher reports changes in a clone as they happen. fsnotify watches one
// folder at a time, so the Watcher watches every folder of the work tree
// (except heavy and ignored ones), adds folders as they appear and drops
// them as they go; in .git it watches only HEAD, the index and the
// branches, so commits and staging are seen but git's own churn is not.
//
// On macOS fsnotify uses kqueue, which holds a file descriptor for every
// file in a watched folder, so a very large work tree can run into the
// process's open-file limit; the error goes to OnError.
type Watcher struct {
	dir, base string
	o         WatchOptions
	fsw       *fsnotify.Watcher
	skip      map[string]bool

	// watched is the set of folders with a watch; only the goroutine in
	// run touches it once Watch has returned.
	watched map[string]bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error
}

// Watch starts watching the clone dir, reporting Status(dir, base) after
// changes. When it returns, every folder is already watched. Close stops it.
func Watch(dir, base string, o WatchOptions) (*Watcher, error) {
	if o.Debounce <= 0 {
		o.Debounce = 300 * time.Millisecond
	}
	if dir == "" {
		return nil, errors.New("watch: no folder given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("watch %s: the clone is not there: start a new session", dir)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w: raise the limit on open files or file watches", dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{
		dir: abs, base: base, o: o, fsw: fsw,
		skip:    map[string]bool{},
		watched: map[string]bool{},
		ctx:     ctx, cancel: cancel,
		done: make(chan struct{}),
	}
	for _, s := range slices.Concat(defaultSkip(), o.Skip) {
		w.skip[s] = true
	}

	// A folder that cannot be watched (too many watches, say) is reported
	// and the rest watched; only an unwatchable root fails Watch.
	pending := w.addTree(abs, w.ignoredDirs())
	if !w.watched[abs] {
		cancel()
		fsw.Close()
		if pending == nil {
			pending = fmt.Errorf("watch %s: the clone cannot be read: check its permissions", dir)
		}
		return nil, pending
	}
	w.watchGit()
	go w.run(pending)
	return w, nil
}

// Close stops watching, waits for the Watcher's goroutine and releases
// every watch. It may be called more than once.
func (w *Watcher) Close() error {
	w.once.Do(func() {
		w.cancel()
		<-w.done
		w.err = w.fsw.Close()
	})
	return w.err
}

func (w *Watcher) run(pending error) {
	defer close(w.done)
	if pending != nil {
		w.fail(pending)
	}
	var (
		timer  *time.Timer
		timerC <-chan time.Time
		first  time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	maxWait := 10 * w.o.Debounce
	schedule := func() {
		now := time.Now()
		if timerC == nil {
			first = now
		}
		d := w.o.Debounce
		if until := first.Add(maxWait).Sub(now); until < d {
			d = max(until, 0)
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		timerC = timer.C
	}
	for {
		select {
		case <-w.ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if w.handle(ev) {
				schedule()
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: folders made meanwhile may be unwatched.
				_ = w.addTree(w.dir, w.ignoredDirs())
				schedule()
				continue
			}
			w.fail(fmt.Errorf("watching %s: %w", w.dir, err))
		case <-timerC:
			timerC = nil
			ch, err := Status(w.ctx, w.dir, w.base)
			if w.ctx.Err() != nil {
				return
			}
			if err != nil {
				w.fail(err)
				continue
			}
			if w.o.OnChange != nil {
				w.o.OnChange(ch)
			}
		}
	}
}

func (w *Watcher) fail(err error) {
	if w.o.OnError != nil {
		w.o.OnError(err)
	}
}

// handle keeps the set of watches in step with an event and reports
// whether it is a change worth a Status.
func (w *Watcher) handle(ev fsnotify.Event) bool {
	rel, err := filepath.Rel(w.dir, ev.Name)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if parts[0] == ".git" {
		return w.handleGit(ev, parts)
	}
	for _, p := range parts {
		if w.skip[p] || p == ".git" {
			return false
		}
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.drop(ev.Name)
	}
	if ev.Has(fsnotify.Create) && !w.watched[ev.Name] {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			if err := w.addTree(ev.Name, w.checkIgnored(ev.Name)); err != nil {
				w.fail(err)
			}
		}
	}
	return true
}

// handleGit reacts to HEAD, the index and branch refs only.
func (w *Watcher) handleGit(ev fsnotify.Event, parts []string) bool {
	if strings.HasSuffix(ev.Name, ".lock") {
		return false
	}
	if len(parts) == 2 {
		return parts[1] == "HEAD" || parts[1] == "index" || parts[1] == "packed-refs"
	}
	if len(parts) < 3 || parts[1] != "refs" || parts[2] != "heads" {
		return false
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.drop(ev.Name)
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			w.addGitRefs(ev.Name)
		}
	}
	return true
}

// watchGit watches .git itself (HEAD, index, packed-refs) and the folders
// of refs/heads (a branch "sandbar/x" is the file refs/heads/sandbar/x).
func (w *Watcher) watchGit() {
	g := filepath.Join(w.dir, ".git")
	if fi, err := os.Stat(g); err != nil || !fi.IsDir() {
		return
	}
	w.add(g)
	w.add(filepath.Join(g, "refs"))
	w.addGitRefs(filepath.Join(g, "refs", "heads"))
}

func (w *Watcher) addGitRefs(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			w.add(p)
		}
		return nil
	})
}

// addTree watches root and the folders under it, except skipped ones and
// those in ignored (slash-separated, relative to the clone).
func (w *Watcher) addTree(root string, ignored map[string]bool) error {
	var first error
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil // gone already, or unreadable: nothing to watch
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(w.dir, p)
		rel = filepath.ToSlash(rel)
		if p != w.dir && (w.skip[d.Name()] || d.Name() == ".git" || ignored[rel]) {
			return filepath.SkipDir
		}
		if err := w.add(p); err != nil && first == nil {
			first = err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("watch %s: %w", root, err)
	}
	return first
}

func (w *Watcher) add(p string) error {
	if w.watched[p] {
		return nil
	}
	if err := w.fsw.Add(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("watch %s: %w: raise the limit on file watches (fs.inotify.max_user_watches on Linux, open files on macOS)", p, err)
	}
	w.watched[p] = true
	return nil
}

// drop forgets the watches on p and everything under it.
func (w *Watcher) drop(p string) {
	prefix := p + string(filepath.Separator)
	for d := range w.watched {
		if d == p || strings.HasPrefix(d, prefix) {
			delete(w.watched, d)
			_ = w.fsw.Remove(d) // gone already, most of the time
		}
	}
}

// ignoredDirs asks git for the folders it ignores, so the start-up walk
// does not descend into build output.
func (w *Watcher) ignoredDirs() map[string]bool {
	out, err := git(w.ctx, w.dir, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil
	}
	m := map[string]bool{}
	for _, p := range splitZ(out) {
		if strings.HasSuffix(p, "/") {
			m[strings.TrimSuffix(p, "/")] = true
		}
	}
	return m
}

// checkIgnored asks git which folders under a new folder it ignores.
func (w *Watcher) checkIgnored(root string) map[string]bool {
	var q strings.Builder
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if w.skip[d.Name()] || d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(w.dir, p)
		q.WriteString(filepath.ToSlash(rel) + "\x00")
		return nil
	})
	if q.Len() == 0 {
		return nil
	}
	out, err := gitInput(w.ctx, w.dir, strings.NewReader(q.String()), "check-ignore", "-z", "--stdin")
	if err != nil {
		return nil // exit 1: nothing ignored
	}
	m := map[string]bool{}
	for _, p := range splitZ(out) {
		m[p] = true
	}
	return m
}

// watchList is for tests: the folders being watched.
func (w *Watcher) watchList() []string { return w.fsw.WatchList() }
