// Package config says where Sandbar keeps its data and caches, and names
// every file in them: the database, the engine's lock, socket and log,
// and each file of a session's directory (SessionDir).
//
// It is the one place that turns the environment (SANDBAR_HOME and the
// platform's conventions) into paths; main builds a Paths value and hands
// it to every part, so nothing else reads the environment. It is not
// where settings live (those are in the store), and it reads and writes
// no file: it creates nothing on disk except directories, through
// Paths.Ensure.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Paths is every location Sandbar reads or writes.
type Paths struct {
	// Home holds the database and the sessions; SANDBAR_HOME overrides it.
	Home string
	// Images holds built guest images, one directory per manifest hash.
	// SANDBAR_IMAGE_DIR overrides it, so tests can share one built image
	// while keeping everything else in a temporary Home.
	Images string
	// Downloads is the content-addressed download cache that lets an image
	// rebuild work offline. It lives in the user cache directory.
	Downloads string
	// Runtime is where the engine's socket goes when Home's path is too
	// long for one (see SocketDir): $XDG_RUNTIME_DIR, else this user's
	// directory in the temp directory.
	Runtime string
}

// Env looks up an environment variable; os.Getenv in main, a map in tests.
type Env func(key string) string

// Resolve computes the paths from the environment and the platform default
// (see defaultHome in config_<os>.go).
func Resolve(env Env) (Paths, error) {
	home := env("SANDBAR_HOME")
	if home == "" {
		h, err := defaultHome(env)
		if err != nil {
			return Paths{}, fmt.Errorf("find the data directory: %w (set SANDBAR_HOME to choose one)", err)
		}
		home = h
	}
	if !filepath.IsAbs(home) {
		abs, err := filepath.Abs(home)
		if err != nil {
			return Paths{}, fmt.Errorf("data directory %q: %w", home, err)
		}
		home = abs
	}
	p := Paths{Home: home, Images: filepath.Join(home, "images"), Runtime: runtimeDir(env)}
	if dir := env("SANDBAR_IMAGE_DIR"); dir != "" {
		p.Images = dir
	}
	cache, err := cacheDir(env)
	if err != nil {
		return Paths{}, err
	}
	p.Downloads = filepath.Join(cache, "sandbar", "downloads")
	return p, nil
}

// DB is the SQLite database file: every part that opens the store opens
// this one.
func (p Paths) DB() string { return filepath.Join(p.Home, dbFile) }

// Reserve is a file of a few MiB Sandbar keeps in the data directory and
// removes when the disk is full, so that the database can still record
// why sessions paused; it is made again once there is room.
func (p Paths) Reserve() string { return filepath.Join(p.Home, "reserve") }

// Sessions is the directory holding one directory per session.
func (p Paths) Sessions() string { return filepath.Join(p.Home, sessionsDir) }

// Session is the path of the directory a session owns, SessionDir(id)'s:
// removing it removes the session.
func (p Paths) Session(id string) string { return p.SessionDir(id).Path() }

// Project is the directory Sandbar keeps for a project: its own git
// repository (ProjectRepo) and the base disks of its sessions
// (ProjectBases). No agent writes there.
func (p Paths) Project(id int64) string {
	return filepath.Join(p.Home, "projects", strconv.FormatInt(id, 10))
}

// ProjectRepo is Sandbar's own bare repository for a project.
func (p Paths) ProjectRepo(id int64) string { return filepath.Join(p.Project(id), "repo.git") }

// ProjectBases holds a project's read-only base disks, one per commit.
func (p Paths) ProjectBases(id int64) string { return filepath.Join(p.Project(id), "bases") }

// EnvImages holds the OCI images pulled for project environments, each a
// read-only ext4 root per image digest (app/env/ociimage), shared by every
// project.
func (p Paths) EnvImages() string { return filepath.Join(p.Home, "environments", "images") }

// PreparedEnvs holds the projects' prepared environments, a folder per
// project id and environment key (app/env/prepared).
func (p Paths) PreparedEnvs() string { return filepath.Join(p.Home, "environments", "prepared") }

// Ensure creates the directories that must exist before anything runs.
// The data directory and its sessions folder are the person's alone
// (0700): one an older Sandbar made 0755 is tightened. Images and
// downloads hold nothing private, and SANDBAR_IMAGE_DIR may be shared, so
// they are only created.
func (p Paths) Ensure() error {
	for _, dir := range []string{p.Home, p.Sessions()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w (check the permissions of its parent, or set SANDBAR_HOME)", dir, err)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("create %s: %w (check the permissions of its parent, or set SANDBAR_HOME)", dir, err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(dir, 0o700); err != nil {
				return fmt.Errorf("make %s private: %w (run chmod 700 on it, or set SANDBAR_HOME to a directory of your own)", dir, err)
			}
		}
	}
	for _, dir := range []string{p.Images, p.Downloads} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w (check the permissions of its parent, or set SANDBAR_HOME)", dir, err)
		}
	}
	return nil
}

func cacheDir(env Env) (string, error) {
	if dir := env("XDG_CACHE_HOME"); dir != "" && filepath.IsAbs(dir) {
		return dir, nil
	}
	home := env("HOME")
	if home == "" {
		return "", errors.New("neither XDG_CACHE_HOME nor HOME is set: set HOME")
	}
	return filepath.Join(home, platformCacheSuffix), nil
}
