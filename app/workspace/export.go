package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// A session's files, for a person to look at with their own tools, are a
// read-only export: the tree of the session's saved snapshot written into
// a folder Sandbar owns, from Sandbar's repository with Sandbar's
// configuration. It has no .git (nothing of the agent's configuration
// comes along, and no git-aware tool finds a repository there), every
// file is 0444 and every folder 0555, and a symlink is written only when
// it resolves inside the export, judged on the export's own tree as this
// system's filesystem resolves it (exportTree). The agent's own files
// stay in its VM.

// MaxExport bounds the bytes of files one export writes: blobs come from
// the agent, and a pack of a few MiB can hold gigabytes of zeros.
const MaxExport = 4 << 30

// ExportInfo describes an export of a session's saved work.
type ExportInfo struct {
	// Dir is the export's folder.
	Dir string
	// Commit is the snapshot it holds (see SaveInfo.Snapshot).
	Commit string
	// Reused: the folder held that snapshot already and was kept.
	Reused bool
	// Files and Bytes count what was written.
	Files int
	Bytes int64
	// Skipped lists what was left out and why: symlinks that lead out of
	// the export, names this system cannot hold.
	Skipped []string
}

// exportStamp is the file beside an export naming the snapshot it holds.
func exportStamp(dest string) string { return dest + ".commit" }

// Export writes the tree of session id's saved snapshot into dest, a
// folder Sandbar owns, replacing what was there in one rename: the new
// tree is written beside dest and swapped in, so a reader sees the old
// export or the new one, never half of one. An export that already holds
// the snapshot is kept.
func (m *Mirror) Export(ctx context.Context, id, dest string) (ExportInfo, error) {
	if err := validSessionID(id); err != nil {
		return ExportInfo{}, err
	}
	s, ok := m.Saved(ctx, id)
	if !ok {
		return ExportInfo{}, fmt.Errorf("session %s has no saved work yet: start it (its work is saved when it stops) and try again", id)
	}
	dest, err := filepath.Abs(dest)
	if err != nil {
		return ExportInfo{}, err
	}
	info := ExportInfo{Dir: dest, Commit: s.Snapshot}
	if b, err := readRegular(exportStamp(dest), 128); err == nil && strings.TrimSpace(string(b)) == s.Snapshot {
		if fi, err := os.Lstat(dest); err == nil && fi.IsDir() {
			info.Reused = true
			return info, nil
		}
	}
	// Counted first, which holds nothing: a tree refused should not
	// have been listed.
	if err := m.boundFiles(ctx, s.Snapshot); err != nil {
		return ExportInfo{}, tooManyFiles(err)
	}
	es, err := m.listTree(ctx, s.Snapshot, MaxSessionFiles)
	if err != nil {
		return ExportInfo{}, tooManyFiles(err)
	}
	var total int64
	for _, e := range es {
		total += e.size
	}
	if total > MaxExport {
		return ExportInfo{}, fmt.Errorf("the session's files come to %d MiB, more than the %d MiB an export holds: look at them inside the VM with `sandbar exec`, or merge the branch", total>>20, MaxExport>>20)
	}
	parent := filepath.Dir(dest)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return ExportInfo{}, fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".export-")
	if err != nil {
		return ExportInfo{}, fmt.Errorf("export the session's files into %s: %w", parent, err)
	}
	defer RemoveExport(tmp) // gone once renamed
	w, err := newExportWriter(tmp, exportFoldsNames)
	if err != nil {
		return ExportInfo{}, err
	}
	werr := m.writeTree(ctx, w, "", es, func(int) {})
	if werr == nil {
		werr = w.finish()
	}
	w.close()
	if werr != nil {
		return ExportInfo{}, fmt.Errorf("export the session's files: %w", werr)
	}
	info.Files, info.Bytes, info.Skipped = w.files, w.bytes, w.skipped
	if err := swapIn(tmp, dest); err != nil {
		return ExportInfo{}, err
	}
	if err := writeAtomic(exportStamp(dest), []byte(s.Snapshot+"\n")); err != nil {
		return ExportInfo{}, err
	}
	return info, nil
}

// swapIn puts the folder tmp at dest, moving an older dest aside first
// and deleting it after. Another process may swap in its own export
// meanwhile; the last one stays.
func swapIn(tmp, dest string) error {
	parent := filepath.Dir(dest)
	var err error
	for range 3 {
		if err = os.Rename(tmp, dest); err == nil {
			return nil
		}
		if _, lerr := os.Lstat(dest); lerr != nil {
			break // not a folder in the way: a real failure
		}
		// A fresh name for the old export (os.Rename will not replace
		// even an empty folder).
		old, merr := os.MkdirTemp(parent, ".export-old-")
		if merr != nil {
			return merr
		}
		os.Remove(old)
		if rerr := os.Rename(dest, old); rerr != nil {
			err = rerr
			continue
		}
		if err = os.Rename(tmp, dest); err == nil {
			return RemoveExport(old)
		}
		RemoveExport(old)
	}
	return fmt.Errorf("put the export in place at %s: %w", dest, err)
}

// writeAtomic writes a small file Sandbar owns under a temporary name and
// renames it into place.
func writeAtomic(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// RemoveExport deletes an export (or any folder Sandbar made read-only):
// its folders are made writable first, without following a symlink.
func RemoveExport(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete %s: %w", dir, err)
	}
	return nil
}

// exportWriter writes a tree into a folder through an os.Root, so no
// name, whatever it holds, reaches outside it. Symlinks are written
// last, when every file and folder is there, so that nothing is ever
// written through one, and only those that resolve inside the export as
// the host's filesystem will resolve them (exportTree).
type exportWriter struct {
	root   *os.Root
	names  exportNames
	claims *exportClaims
	tree   *exportTree
	// pending: symlinks to write, in the tree's order.
	pending []pendingLink
	dirs    []string // made, to close at the end
	made    map[string]bool
	files   int
	bytes   int64
	skipped []string
}

// newExportWriter writes into dir, comparing names as a filesystem that
// folds case and Unicode form does when fold is set (see exportNames).
func newExportWriter(dir string, fold bool) (*exportWriter, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	names := newExportNames(fold)
	return &exportWriter{
		root: root, names: names, claims: newExportClaims(names), tree: newExportTree(names),
		made: map[string]bool{".": true},
	}, nil
}

// pendingLink is a symlink to write: its name, target, and id in tree.
type pendingLink struct {
	name, target string
	id           int
}

func (w *exportWriter) close() { w.root.Close() }

// admit says why name is not written, "" when it is: a name no system
// should hold, one this filesystem cannot, or one that is another's name
// here. An admitted name is claimed.
func (w *exportWriter) admit(name string, leaf bool) string {
	if why := badName(name); why != "" {
		return why
	}
	if why := w.names.unholdable(name); why != "" {
		return why
	}
	return w.claims.claim(name, leaf)
}

// badName says why a path from the tree is not written, "" when it is
// fine. Git's own checks refuse most of these in what it takes in; the
// export does not rely on that.
func badName(name string) string {
	if name == "" || strings.HasPrefix(name, "/") {
		return "not a relative path"
	}
	for _, c := range strings.Split(name, "/") {
		switch {
		case c == "", c == ".", c == "..":
			return "a path with an empty, . or .. part"
		case isDotGit(c):
			return "a folder named like .git"
		}
	}
	return ""
}

// isDotGit reports whether a name is .git as some filesystem sees it: any
// case, trailing dots or spaces (Windows, SMB), characters macOS ignores,
// or the short name GIT~1.
func isDotGit(c string) bool {
	c = strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, c)
	c = strings.ToLower(strings.TrimRight(c, ". "))
	return c == ".git" || c == "git~1"
}

func (w *exportWriter) skip(name, why string) {
	if len(w.skipped) < 1000 {
		w.skipped = append(w.skipped, fmt.Sprintf("%q: %s", name, why))
	}
}

// mkdirs makes the folder name and its parents.
func (w *exportWriter) mkdirs(name string) error {
	if w.made[name] {
		return nil
	}
	if err := w.mkdirs(path.Dir(name)); err != nil {
		return err
	}
	if err := w.root.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if fi, err := w.root.Lstat(name); err != nil || !fi.IsDir() {
		return fmt.Errorf("%q is not a folder: %w", name, fs.ErrExist)
	}
	w.made[name] = true
	w.dirs = append(w.dirs, name)
	return nil
}

// nameless reports whether err means this system cannot hold a name
// (too long, not valid in its encoding, or equal to another one when
// case is ignored): the file is skipped, the export goes on.
func nameless(err error) bool {
	return errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.EILSEQ) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTDIR)
}

func (w *exportWriter) dir(name string) error {
	if why := w.admit(name, false); why != "" {
		w.skip(name, why)
		return nil
	}
	if err := w.mkdirs(name); err != nil {
		if nameless(err) {
			w.skip(name, err.Error())
			return nil
		}
		return err
	}
	return nil
}

func (w *exportWriter) file(name string, _, size int64, r io.Reader) error {
	if why := w.admit(name, true); why != "" {
		w.skip(name, why)
		return nil
	}
	if err := w.mkdirs(path.Dir(name)); err != nil {
		if nameless(err) {
			w.skip(name, err.Error())
			return nil
		}
		return err
	}
	f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		if nameless(err) {
			w.skip(name, err.Error())
			return nil
		}
		return err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("%q: %d bytes, want %d", name, n, size)
	}
	if err != nil {
		return err
	}
	w.files++
	w.bytes += n
	return nil
}

func (w *exportWriter) symlink(name, target string) error {
	switch {
	case target == "" || len(target) > maxLinkTarget || strings.IndexByte(target, 0) >= 0:
		w.skip(name, fmt.Sprintf("a symlink to %q, which this system cannot hold", target))
		return nil
	case w.names.fold && !utf8.ValidString(target):
		w.skip(name, fmt.Sprintf("a symlink to %q, which is not UTF-8", target))
		return nil
	}
	if why := w.admit(name, true); why != "" {
		w.skip(name, why)
		return nil
	}
	// Its folder now, so that the symlink judged is the one written.
	if err := w.mkdirs(path.Dir(name)); err != nil {
		if nameless(err) {
			w.skip(name, err.Error())
			return nil
		}
		return err
	}
	w.pending = append(w.pending, pendingLink{name, target, w.tree.add(name, target)})
	return nil
}

// finish writes the symlinks that stay inside the export, then closes
// every folder (0555). Should the system refuse one judged inside, the
// rest are judged again without it (those that led through it may now
// lead elsewhere), and any written that no longer stay inside are
// removed.
func (w *exportWriter) finish() error {
	written := map[string]bool{}
	for {
		refused := ""
		for _, l := range w.pending {
			name := l.name
			in := w.tree.inside(l.id)
			switch {
			case in && !written[name]:
				if err := w.root.Symlink(l.target, name); err != nil {
					if !nameless(err) {
						return err
					}
					w.skip(name, err.Error())
					w.tree.out[l.id] = true
					refused = name
				} else {
					written[name] = true
				}
			case !in && written[name]:
				if err := w.root.Remove(name); err != nil {
					return err
				}
				delete(written, name)
			}
			if refused != "" {
				break
			}
		}
		if refused == "" {
			break
		}
		w.tree.forget()
	}
	for _, l := range w.pending {
		name, target := l.name, l.target
		switch {
		case written[name]:
			w.files++
		case !w.tree.out[l.id]:
			w.skip(name, fmt.Sprintf("a symlink to %q, which leads out of the export", target))
		}
	}
	for i := len(w.dirs) - 1; i >= 0; i-- {
		if err := w.root.Chmod(w.dirs[i], 0o555); err != nil {
			return err
		}
	}
	return w.root.Chmod(".", 0o555)
}
