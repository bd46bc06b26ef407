package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"sandbar/app/config"
)

// Inspection is what a session's directory says of the session, read back
// from its files alone (as lima's store.Inspect rebuilds an instance): no
// store, no VM. The Manager reads a session's files only through it.
type Inspection struct {
	Dir config.SessionDir
	// Exists is false when the directory is gone (or never was).
	Exists bool
	// BaseCommit is the commit the session's branch started from; "" when
	// none is recorded (it never got a workspace).
	BaseCommit string
	// BaseDisk is the path of the project's base disk its workspace is
	// layered on; "" when none is recorded.
	BaseDisk string
	// SavedAt is when its work was last saved; zero when not recorded.
	SavedAt time.Time
	// SaveError says why its clone may hold work that is not saved: its
	// last save failed, or its VM or Sandbar ended before it saved. ""
	// when the last save succeeded (or it never booted).
	SaveError string
	// Legacy: the directory holds a clone an older Sandbar shared with
	// the VM, and no base disk.
	Legacy bool
	// The files that are there; nil when absent.
	AgentLog, Transcript, Console, Scratch, NetworkRepo, Export *FileInfo
	// Problems lists files that are there but could not be read as
	// Sandbar writes them.
	Problems []string
}

// FileInfo is one file or folder of a session's directory.
type FileInfo struct {
	Path string
	Dir  bool
	// Size is the file's length; Allocated the bytes its blocks take on
	// disk (less for a sparse scratch disk). Neither counts a folder's
	// contents.
	Size, Allocated int64
}

// maxSessionFile bounds the small files Sandbar writes in a session's
// directory (a commit, a path, a time, an error).
const maxSessionFile = 4096

// Inspect reads what is known of a session from its directory. A missing
// directory is not an error (Exists is false); one that cannot be listed
// is.
func Inspect(dir config.SessionDir) (Inspection, error) {
	in := Inspection{Dir: dir}
	fi, err := os.Stat(dir.Path())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return in, nil
	case err != nil:
		return in, fmt.Errorf("inspect session %s: %w", dir.ID(), err)
	case !fi.IsDir():
		return in, fmt.Errorf("inspect session %s: %s is not a folder", dir.ID(), dir.Path())
	}
	in.Exists = true
	small := func(p string) string {
		v, err := readSmallFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			in.Problems = append(in.Problems, err.Error())
		}
		return v
	}
	in.BaseCommit = small(dir.BaseCommit())
	in.BaseDisk = small(dir.BaseDisk())
	in.SaveError = small(dir.SaveError())
	if v := small(dir.SavedAt()); v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			in.SavedAt = t.Local()
		} else {
			in.Problems = append(in.Problems, fmt.Sprintf("%s: %v", dir.SavedAt(), err))
		}
	}
	_, baseErr := os.Lstat(dir.BaseDisk())
	if ws, err := os.Lstat(dir.LegacyWorkspace()); err == nil && ws.IsDir() && baseErr != nil {
		in.Legacy = true
	}
	in.AgentLog = fileInfo(dir.AgentLog())
	in.Transcript = fileInfo(dir.Transcript())
	in.Console = fileInfo(dir.Console())
	in.Scratch = fileInfo(dir.Scratch())
	in.NetworkRepo = fileInfo(dir.NetworkRepo())
	in.Export = fileInfo(dir.Export())
	return in, nil
}

// inspect is Inspect of session id's directory; a directory it cannot
// read says nothing.
func (m *Manager) inspect(id string) Inspection {
	in, err := Inspect(m.cfg.Paths.SessionDir(id))
	if err != nil {
		m.log.Warn("inspect the session's folder", "session", id, "err", err)
	}
	return in
}

// fileInfo describes p without following a symlink; nil if it is absent.
func fileInfo(p string) *FileInfo {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	f := &FileInfo{Path: p, Dir: fi.IsDir(), Size: fi.Size(), Allocated: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.Allocated = int64(st.Blocks) * 512
	}
	return f
}

// readSmallFile reads one small file of a session's directory (Sandbar
// writes them; the bound and the regular-file check are there all the
// same), trimmed.
func readSmallFile(p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxSessionFile {
		return "", fmt.Errorf("%s is not a small regular file", p)
	}
	b, err := os.ReadFile(p)
	return strings.TrimSpace(string(b)), err
}
