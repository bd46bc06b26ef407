package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// A save's packs are indexed into a quarantine first, as receive-pack
// does with a push: a folder objects/incoming-XXXX of the mirror that git
// is pointed at (GIT_OBJECT_DIRECTORY) with the mirror's own objects as
// an alternate. The save's checks run with that environment; only when
// every one has passed do its packs move into objects/pack, and a save
// refused leaves nothing behind. Packs still pile up, one per submodule
// and one for the project per save, so Maintain consolidates them.

// quarantine makes a quarantine in m's object store, and returns a Mirror
// whose git commands see it, and a func that removes what is left of it.
func (m *Mirror) quarantine() (*Mirror, func(), error) {
	objects := filepath.Join(m.Dir, "objects")
	q, err := os.MkdirTemp(objects, "incoming-")
	if err != nil {
		return nil, nil, fmt.Errorf("make a quarantine for the session's work in %s: %w", objects, err)
	}
	if err := os.Mkdir(filepath.Join(q, "pack"), 0o700); err != nil {
		os.RemoveAll(q)
		return nil, nil, fmt.Errorf("make a quarantine for the session's work in %s: %w", objects, err)
	}
	qm := &Mirror{Dir: m.Dir, Limits: m.Limits, env: []string{
		"GIT_OBJECT_DIRECTORY=" + q,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objects,
		// Git refuses to update a ref with this set.
		"GIT_QUARANTINE_PATH=" + q,
	}}
	return qm, func() { os.RemoveAll(q) }, nil
}

// quarantineDir is the quarantine a Mirror from quarantine() writes to.
func (m *Mirror) quarantineDir() string {
	for _, kv := range m.env {
		if v, ok := strings.CutPrefix(kv, "GIT_QUARANTINE_PATH="); ok {
			return v
		}
	}
	return ""
}

// migrate moves the quarantine's packs into the mirror's objects/pack:
// each .pack first, its .idx last, since the .idx is what makes git see a
// pack.
func (m *Mirror) migrate() error {
	q := m.quarantineDir()
	if q == "" {
		return nil
	}
	from := filepath.Join(q, "pack")
	to := filepath.Join(m.Dir, "objects", "pack")
	names, err := filepath.Glob(filepath.Join(from, "pack-*.pack"))
	if err != nil {
		return err
	}
	for _, p := range names {
		base := strings.TrimSuffix(filepath.Base(p), ".pack")
		for _, ext := range []string{".pack", ".rev", ".idx"} {
			src := filepath.Join(from, base+ext)
			if _, err := os.Lstat(src); os.IsNotExist(err) && ext == ".rev" {
				continue
			}
			if err := os.Rename(src, filepath.Join(to, base+ext)); err != nil {
				return fmt.Errorf("move the session's work into %s: %w", to, err)
			}
		}
	}
	return nil
}

// maxPacks is how many packs the mirror may hold before Maintain
// consolidates them.
const maxPacks = 20

// maintainDeadline bounds one consolidation.
const maintainDeadline = 10 * time.Minute

// Maintain consolidates the mirror's packs into one when it holds more
// than maxPacks (`git gc --auto`, in the foreground as mirrorConfig sets
// gc.autoDetach=false, which also prunes unreachable objects older than
// two weeks, such as a forgotten session's), and removes quarantines a
// killed save left over a day ago. ImportSave and Forget call it; what
// fails is tried again the next time.
func (m *Mirror) Maintain(ctx context.Context) error {
	objects := filepath.Join(m.Dir, "objects")
	if old, _ := filepath.Glob(filepath.Join(objects, "incoming-*")); len(old) > 0 {
		for _, q := range old {
			if fi, err := os.Lstat(q); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
				os.RemoveAll(q)
			}
		}
	}
	packs, err := filepath.Glob(filepath.Join(objects, "pack", "pack-*.pack"))
	if err != nil || len(packs) <= maxPacks {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, maintainDeadline)
	defer cancel()
	if _, err := git(ctx, m.Dir, "-c", fmt.Sprintf("gc.autoPackLimit=%d", maxPacks), "gc", "--auto", "--quiet"); err != nil {
		return fmt.Errorf("consolidate the packs of %s: %w", m.Dir, err)
	}
	return nil
}

// packFiles lists the files of the mirror's objects/pack, for tests and
// logs.
func (m *Mirror) packFiles() []string {
	es, _ := os.ReadDir(filepath.Join(m.Dir, "objects", "pack"))
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}
