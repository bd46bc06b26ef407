package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// watchT watches a fresh clone and returns it with a channel of the
// changes reported; errors fail the test.
func watchT(t *testing.T, debounce time.Duration, prepare func(dir string)) (string, *Watcher, chan Changes) {
	t.Helper()
	root := newRepo(t, "")
	dir, base := cloneT(t, root, "sandbar/w")
	if prepare != nil {
		prepare(dir)
	}
	changes := make(chan Changes, 1000)
	w, err := Watch(dir, base, WatchOptions{
		Debounce: debounce,
		OnChange: func(c Changes) { changes <- c },
		OnError:  func(err error) { t.Errorf("watcher: %v", err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return dir, w, changes
}

// waitFor waits for a reported change that satisfies ok.
func waitFor(t *testing.T, changes <-chan Changes, what string, ok func(Changes) bool) Changes {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-changes:
			if ok(c) {
				return c
			}
		case <-deadline:
			t.Fatalf("no change reported in 10s: %s", what)
		}
	}
}

func hasFile(c Changes, path, status string) bool {
	return slices.Contains(c.Files, FileChange{Path: path, Status: status})
}

func TestWatchNewNestedFolder(t *testing.T) {
	t.Parallel()
	dir, w, changes := watchT(t, 50*time.Millisecond, nil)

	deep := filepath.Join(dir, "new", "deeper", "ü dir")
	writeFile(t, filepath.Join(deep, "first.txt"), "1\n")
	waitFor(t, changes, "a file made with its folders", func(c Changes) bool {
		return hasFile(c, "new/deeper/ü dir/first.txt", "untracked")
	})
	// The new folders are watched now, so a later edit there is seen too.
	writeFile(t, filepath.Join(deep, "second.txt"), "2\n")
	waitFor(t, changes, "a file in a folder that appeared after Watch", func(c Changes) bool {
		return hasFile(c, "new/deeper/ü dir/second.txt", "untracked")
	})
	if !slices.Contains(w.watchList(), deep) {
		t.Errorf("%s is not watched: %q", deep, w.watchList())
	}

	// A removed folder's watches go.
	if err := os.RemoveAll(filepath.Join(dir, "new")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changes, "a removed folder", func(c Changes) bool { return len(c.Files) == 0 })
	for _, p := range w.watchList() {
		if strings.Contains(p, "deeper") {
			t.Errorf("removed folder still watched: %s", p)
		}
	}

	// A renamed folder is watched under its new name.
	writeFile(t, filepath.Join(dir, "old name", "f.txt"), "f\n")
	waitFor(t, changes, "a file in a new folder", func(c Changes) bool { return hasFile(c, "old name/f.txt", "untracked") })
	if err := os.Rename(filepath.Join(dir, "old name"), filepath.Join(dir, "new name")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changes, "a renamed folder", func(c Changes) bool { return hasFile(c, "new name/f.txt", "untracked") })
	writeFile(t, filepath.Join(dir, "new name", "g.txt"), "g\n")
	waitFor(t, changes, "a file in a renamed folder", func(c Changes) bool { return hasFile(c, "new name/g.txt", "untracked") })
}

func TestWatchSkipsHeavyAndIgnoredFolders(t *testing.T) {
	t.Parallel()
	const debounce = 50 * time.Millisecond
	dir, w, changes := watchT(t, debounce, func(dir string) {
		writeFile(t, filepath.Join(dir, "node_modules", "pkg", "index.js"), "module.exports = 1\n")
		writeFile(t, filepath.Join(dir, "sub", "target", "debug", "x"), "x")
		writeFile(t, filepath.Join(dir, "out", "gen", "y.txt"), "git ignores out/\n")
	})
	for _, p := range w.watchList() {
		rel, _ := filepath.Rel(dir, p)
		for _, skipped := range []string{"node_modules", "target", "out", ".git/objects", ".git/logs"} {
			if strings.HasPrefix(filepath.ToSlash(rel), skipped) || strings.Contains(rel, "/"+skipped) {
				t.Errorf("%s is watched", rel)
			}
		}
	}
	if !slices.Contains(w.watchList(), filepath.Join(dir, "src")) {
		t.Errorf("src is not watched: %q", w.watchList())
	}

	writeFile(t, filepath.Join(dir, "node_modules", "pkg", "index.js"), "module.exports = 2\n")
	writeFile(t, filepath.Join(dir, "node_modules", "pkg", "new.js"), "new\n")
	writeFile(t, filepath.Join(dir, "sub", "target", "debug", "x"), "y")
	// Nothing may come of those: wait a good many debounce periods.
	select {
	case c := <-changes:
		t.Fatalf("a change in a skipped folder was reported: %+v", c)
	case <-time.After(10 * debounce):
	}
	writeFile(t, filepath.Join(dir, "src", "main.go"), "package main // edited\n")
	waitFor(t, changes, "an edit next to the skipped folders", func(c Changes) bool {
		return hasFile(c, "src/main.go", "modified")
	})
}

func TestWatchDebounce(t *testing.T) {
	t.Parallel()
	const debounce = 200 * time.Millisecond
	dir, _, changes := watchT(t, debounce, nil)

	for i := range 50 {
		writeFile(t, filepath.Join(dir, "README.md"), fmt.Sprintf("# edit %d\n", i))
	}
	first := waitFor(t, changes, "50 quick writes", func(Changes) bool { return true })
	n := 1
	quiet := time.After(5 * debounce)
	for done := false; !done; {
		select {
		case <-changes:
			n++
		case <-quiet:
			done = true
		}
	}
	if n > 2 {
		t.Errorf("50 quick writes gave %d callbacks, want at most 2", n)
	}
	if !hasFile(first, "README.md", "modified") {
		t.Errorf("first callback: %+v", first)
	}
}

func TestWatchSeesCommits(t *testing.T) {
	t.Parallel()
	dir, _, changes := watchT(t, 50*time.Millisecond, nil)
	writeFile(t, filepath.Join(dir, "feature.txt"), "f\n")
	waitFor(t, changes, "a new file", func(c Changes) bool { return hasFile(c, "feature.txt", "untracked") })
	gitT(t, dir, "add", "feature.txt")
	waitFor(t, changes, "a staged file", func(c Changes) bool { return hasFile(c, "feature.txt", "added") && c.Ahead == 0 })
	gitT(t, dir, "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-q", "-m", "feature")
	c := waitFor(t, changes, "a commit", func(c Changes) bool { return c.Ahead == 1 })
	if c.Porcelain != "" || !hasFile(c, "feature.txt", "added") {
		t.Errorf("after the commit: %+v", c)
	}
	// A branch in a new ref folder, then a commit on it.
	gitT(t, dir, "switch", "-q", "-c", "topic/deep/er")
	commitT(t, dir, "more.txt", "m\n", "more")
	waitFor(t, changes, "a commit on a branch in a new ref folder", func(c Changes) bool { return c.Ahead == 2 })
}

// TestWatchCloseLeaksNothing must not run in parallel: it counts the
// process's goroutines.
func TestWatchCloseLeaksNothing(t *testing.T) {
	root := newRepo(t, "")
	dir, base := cloneT(t, root, "sandbar/w")
	before := runtime.NumGoroutine()

	changes := make(chan Changes, 100)
	w, err := Watch(dir, base, WatchOptions{Debounce: 20 * time.Millisecond, OnChange: func(c Changes) { changes <- c }})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a", "b.txt"), "b\n")
	waitFor(t, changes, "a new file", func(c Changes) bool { return hasFile(c, "a/b.txt", "untracked") })
	// Close in the middle of a burst, with a Status pending.
	writeFile(t, filepath.Join(dir, "c.txt"), "c\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchMissingFolder(t *testing.T) {
	t.Parallel()
	if _, err := Watch(filepath.Join(t.TempDir(), "gone"), "", WatchOptions{}); err == nil || !strings.Contains(err.Error(), "not there") {
		t.Errorf("err = %v", err)
	}
}
