// Package prepared keeps a project's prepared environments: the
// read-only disks made once per environment key (see
// devcontainer.Key) by a machine that ran the environment's setup, on
// which the project's sessions boot under their own layers (see
// sandbox.Capture and guest/cmd/sandbar-init/prepared.go).
//
// It stores and finds them; it makes none and boots nothing: that is the
// session manager's.
package prepared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Store keeps prepared environments under Dir, one folder per project
// and key:
//
//	Dir/<project>/<key>/env.img        the disk, read-only to every session
//	Dir/<project>/<key>/env.json       what Env says of it
//	Dir/<project>/<key>/prepare.log    the preparing machine's log
//	Dir/<project>/tmp/<key>-<n>/       one being made, renamed into place whole
//
// A key's folder appears whole or not at all. A failed preparation keeps
// its log (and env.json with State failed) for the person to read, never
// its disk.
type Store struct {
	Dir string
}

// States of a prepared environment.
const (
	StateReady  = "ready"
	StateFailed = "failed"
)

// Env is one prepared environment.
type Env struct {
	Project string `json:"project"`
	// Key names its inputs, the repository's commit among them; BaseKey
	// the same inputs but the commit: a session on another commit of
	// the project boots on an Env of its BaseKey, and runs the
	// environment's updateContentCommand first.
	Key     string `json:"key"`
	BaseKey string `json:"base_key"`
	Commit  string `json:"commit"`
	// Image is the image it was prepared on ("" for Sandbar's own) and
	// its digest.
	Image       string `json:"image,omitempty"`
	ImageDigest string `json:"image_digest,omitempty"`
	State       string `json:"state"`
	// Error is why a failed one failed, in words.
	Error string `json:"error,omitempty"`
	// Made is when it was finished; Took how long its making took, and
	// SetupTook how much of that the environment's own commands ran.
	Made      time.Time     `json:"made"`
	Took      time.Duration `json:"took"`
	SetupTook time.Duration `json:"setup_took"`
	// Files and Bytes are what the capture copied.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	// Origin is what a session needs to boot on it as it was made: the
	// file, the features' environment and the image it was made from.
	// It is the session manager's, kept here unread: while a changed
	// file's environment is made, sessions boot on the previous one.
	Origin json.RawMessage `json:"origin,omitempty"`

	// Path is its disk; Log its preparing log; Size the disk's blocks
	// on the host's disk; LastUse when a session last booted on it.
	Path    string    `json:"-"`
	Log     string    `json:"-"`
	Size    int64     `json:"-"`
	LastUse time.Time `json:"-"`
	// Folder is its folder's name: its Key, or Key+FailedSuffix for a
	// failed remake of a key whose ready environment stays.
	Folder string `json:"-"`
}

// FailedSuffix names the folder of a failed build of a key that has a
// ready environment: a failed remake never removes a good one.
const FailedSuffix = ".failed"

const (
	diskFile = "env.img"
	metaFile = "env.json"
	logFile  = "prepare.log"
	tmpDir   = "tmp"
)

// validName is what a project id and a key may be: they become folder
// names.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func checkNames(project, key string) error {
	if !validName.MatchString(project) || !validName.MatchString(key) {
		return fmt.Errorf("prepared environments: %q/%q is not a project id and key", project, key)
	}
	return nil
}

// Build is a prepared environment being made: its folder under tmp until
// Finish or Fail.
type Build struct {
	s            *Store
	project, key string
	dir          string
}

// Begin starts making the environment project/key: its disk and log go
// in a fresh folder of their own (Disk, LogPath), whatever else is being
// made beside it.
func (s *Store) Begin(project, key string) (*Build, error) {
	if err := checkNames(project, key); err != nil {
		return nil, err
	}
	tmp := filepath.Join(s.Dir, project, tmpDir)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("prepared environments: %w", err)
	}
	dir, err := os.MkdirTemp(tmp, key+"-")
	if err != nil {
		return nil, fmt.Errorf("prepared environments: %w", err)
	}
	return &Build{s: s, project: project, key: key, dir: dir}, nil
}

// Disk is where the capture writes the environment's disk.
func (b *Build) Disk() string { return filepath.Join(b.dir, diskFile) }

// LogPath is where the preparing machine's log goes.
func (b *Build) LogPath() string { return filepath.Join(b.dir, logFile) }

// Dir is the build's own folder, for the machines that make it.
func (b *Build) Dir() string { return b.dir }

// Finish records e (its Project, Key and State are set here) and puts
// the build in place of any environment of the same key.
func (b *Build) Finish(e Env) (Env, error) {
	e.Project, e.Key, e.State, e.Error = b.project, b.key, StateReady, ""
	if _, err := os.Stat(b.Disk()); err != nil {
		return Env{}, fmt.Errorf("prepared environment %s: its disk: %w", b.key, err)
	}
	if err := os.Chmod(b.Disk(), 0o400); err != nil {
		return Env{}, err
	}
	return b.place(e)
}

// Fail records why the build failed and keeps its log, not its disk.
// Where the key has a ready environment, that one stays and the failure
// is kept beside it (FailedSuffix).
func (b *Build) Fail(e Env, why error) (Env, error) {
	e.Project, e.Key, e.State, e.Error = b.project, b.key, StateFailed, why.Error()
	os.Remove(b.Disk())
	if old, err := b.s.read(b.project, b.key); err == nil && old.State == StateReady {
		return b.placeAt(e, b.key+FailedSuffix)
	}
	return b.place(e)
}

// Abandon removes the build without a trace (its context ended).
func (b *Build) Abandon() { os.RemoveAll(b.dir) }

func (b *Build) place(e Env) (Env, error) {
	placed, err := b.placeAt(e, b.key)
	if err == nil {
		// A failure kept beside the key's ready one is over.
		os.RemoveAll(filepath.Join(b.s.Dir, b.project, b.key+FailedSuffix))
	}
	return placed, err
}

// placeAt puts the build in the folder name, whole.
func (b *Build) placeAt(e Env, name string) (Env, error) {
	os.Remove(filepath.Join(b.dir, progressFile)) // made, not being made
	if e.Made.IsZero() {
		e.Made = time.Now().UTC()
	}
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return Env{}, err
	}
	if err := os.WriteFile(filepath.Join(b.dir, metaFile), data, 0o600); err != nil {
		return Env{}, fmt.Errorf("prepared environment %s: %w", b.key, err)
	}
	final := filepath.Join(b.s.Dir, b.project, name)
	old := final + ".old-" + filepath.Base(b.dir)
	if err := os.Rename(final, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Env{}, err
	}
	if err := os.Rename(b.dir, final); err != nil {
		os.Rename(old, final)
		return Env{}, fmt.Errorf("prepared environment %s: %w", b.key, err)
	}
	os.RemoveAll(old)
	return b.s.read(b.project, name)
}

// read reads project's folder name (a key, or a key's failure kept
// beside it).
func (s *Store) read(project, name string) (Env, error) {
	dir := filepath.Join(s.Dir, project, name)
	key := strings.TrimSuffix(name, FailedSuffix)
	data, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return Env{}, err
	}
	var e Env
	if err := json.Unmarshal(data, &e); err != nil {
		return Env{}, fmt.Errorf("prepared environment %s: %s does not parse: %w", key, metaFile, err)
	}
	if e.Project != project || e.Key != key {
		return Env{}, fmt.Errorf("prepared environment %s: %s names another (%s/%s)", key, metaFile, e.Project, e.Key)
	}
	if name != key && e.State != StateFailed {
		return Env{}, fmt.Errorf("prepared environment %s: a ready one in a failure's folder", key)
	}
	e.Folder = name
	e.Log = filepath.Join(dir, logFile)
	if e.State == StateReady {
		e.Path = filepath.Join(dir, diskFile)
		fi, err := os.Stat(e.Path)
		if err != nil {
			return Env{}, fmt.Errorf("prepared environment %s: its disk: %w", key, err)
		}
		e.LastUse = fi.ModTime()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			e.Size = st.Blocks * 512
		}
	} else if fi, err := os.Stat(filepath.Join(dir, metaFile)); err == nil {
		e.LastUse = fi.ModTime()
	}
	return e, nil
}

// List lists project's environments, the most recently made first. One
// whose folder does not read is left out.
func (s *Store) List(project string) ([]Env, error) {
	if !validName.MatchString(project) {
		return nil, fmt.Errorf("prepared environments: %q is not a project id", project)
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, project))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Env
	for _, de := range entries {
		if !de.IsDir() || de.Name() == tmpDir || strings.Contains(de.Name(), ".old-") {
			continue
		}
		if e, err := s.read(project, de.Name()); err == nil {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Env) int { return b.Made.Compare(a.Made) })
	return out, nil
}

// Find returns the ready environment of project for baseKey, the one
// made on commit when there is one, else the most recently made.
func (s *Store) Find(project, baseKey, commit string) (Env, bool) {
	all, err := s.List(project)
	if err != nil {
		return Env{}, false
	}
	var best Env
	found := false
	for _, e := range all {
		if e.State != StateReady || e.BaseKey != baseKey {
			continue
		}
		if e.Commit == commit {
			return e, true
		}
		if !found {
			best, found = e, true
		}
	}
	return best, found
}

// Touch records a use of project/key now.
func (s *Store) Touch(project, key string) error {
	if err := checkNames(project, key); err != nil {
		return err
	}
	now := time.Now()
	return os.Chtimes(filepath.Join(s.Dir, project, key, diskFile), now, now)
}

// Remove deletes project's folder key (an Env's Folder).
func (s *Store) Remove(project, key string) error {
	if err := checkNames(project, key); err != nil {
		return err
	}
	dir := filepath.Join(s.Dir, project, key)
	gone := dir + ".old-removed"
	// A removal that died half-way left it: the rename would fail on it.
	if err := os.RemoveAll(gone); err != nil {
		return err
	}
	if err := os.Rename(dir, gone); err != nil {
		return err
	}
	return os.RemoveAll(gone)
}

// Prune removes what no session needs: of each project, every failed
// environment but the newest of its base key, and every ready one older
// than keep that is neither the newest ready one of its base key nor in
// use; builds left in tmp by a process that died are removed too. used
// says whether a session boots on a disk (by its path).
func (s *Store) Prune(ctx context.Context, now time.Time, keep time.Duration, used func(path string) bool) (removed []Env, err error) {
	projects, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, p := range projects {
		if ctx.Err() != nil {
			return removed, ctx.Err()
		}
		if !p.IsDir() || !validName.MatchString(p.Name()) {
			continue
		}
		tmps, _ := os.ReadDir(filepath.Join(s.Dir, p.Name(), tmpDir))
		for _, t := range tmps {
			if fi, err := t.Info(); err == nil && now.Sub(fi.ModTime()) > 24*time.Hour {
				os.RemoveAll(filepath.Join(s.Dir, p.Name(), tmpDir, t.Name()))
			}
		}
		s.removeLeftovers(p.Name())
		all, err := s.List(p.Name())
		if err != nil {
			continue
		}
		newest := map[string]bool{} // state + base key seen
		for _, e := range all {
			first := !newest[e.State+" "+e.BaseKey]
			newest[e.State+" "+e.BaseKey] = true
			switch {
			case first:
				continue
			case e.State == StateReady && (used(e.Path) || now.Sub(e.LastUse) < keep):
				continue
			}
			if err := s.Remove(e.Project, e.Folder); err == nil {
				removed = append(removed, e)
			}
		}
	}
	return removed, nil
}

// removeLeftovers removes what a process that died mid-removal or
// mid-replacement left in project's folder: a key's .old-removed, and a
// replaced key's .old-<build> once that build is no longer in tmp (while
// it is, placeAt may still put the old one back).
func (s *Store) removeLeftovers(project string) {
	entries, _ := os.ReadDir(filepath.Join(s.Dir, project))
	for _, de := range entries {
		_, build, ok := strings.Cut(de.Name(), ".old-")
		if !ok || !de.IsDir() {
			continue
		}
		if build != "removed" {
			if _, err := os.Lstat(filepath.Join(s.Dir, project, tmpDir, build)); err == nil {
				continue
			}
		}
		os.RemoveAll(filepath.Join(s.Dir, project, de.Name()))
	}
}

// Progress is what a build being made says of itself, in its folder
// (progress.json), for the processes that did not start it: `sandbar
// env` and a window read it while the engine prepares.
type Progress struct {
	Project string    `json:"project"`
	Key     string    `json:"key"`
	BaseKey string    `json:"base_key"`
	Commit  string    `json:"commit"`
	Step    string    `json:"step"`
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	// PID is the process making it: a build whose process is gone is
	// left over, not being made.
	PID int `json:"pid"`

	// Log is the build's log, as it is written.
	Log string `json:"-"`
}

const progressFile = "progress.json"

// SetProgress records p (its Project, Key, PID and Updated are set
// here) in the build's folder, replacing the file whole.
func (b *Build) SetProgress(p Progress) error {
	p.Project, p.Key, p.PID, p.Updated = b.project, b.key, os.Getpid(), time.Now().UTC()
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp := filepath.Join(b.dir, progressFile+".new")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(b.dir, progressFile))
}

// Building lists the builds of project being made now by a live
// process, the most recently started first.
func (s *Store) Building(project string) ([]Progress, error) {
	if !validName.MatchString(project) {
		return nil, fmt.Errorf("prepared environments: %q is not a project id", project)
	}
	tmp := filepath.Join(s.Dir, project, tmpDir)
	entries, err := os.ReadDir(tmp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Progress
	for _, de := range entries {
		data, err := os.ReadFile(filepath.Join(tmp, de.Name(), progressFile))
		if err != nil || len(data) > 64<<10 {
			continue
		}
		var p Progress
		if json.Unmarshal(data, &p) != nil || p.Project != project || !processAlive(p.PID) {
			continue
		}
		p.Log = filepath.Join(tmp, de.Name(), logFile)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Progress) int { return b.Started.Compare(a.Started) })
	return out, nil
}

// Projects lists the projects that have prepared environments here.
func (s *Store) Projects() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range entries {
		if de.IsDir() && validName.MatchString(de.Name()) {
			out = append(out, de.Name())
		}
	}
	return out, nil
}

// processAlive says whether pid names a running process.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
