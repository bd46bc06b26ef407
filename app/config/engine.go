package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// The engine's own files: one process per data directory is its engine
// (app/engine), and these name what it holds there.

// EngineLock is the file the engine holds locked (flock) while it runs,
// with its pid written in it.
func (p Paths) EngineLock() string { return filepath.Join(p.Home, "engine.lock") }

// EngineLog is where a headless engine (`sandbar serve`, started by a
// command that found none) writes its log.
func (p Paths) EngineLog() string { return filepath.Join(p.Home, "engine.log") }

// maxSocketPath keeps a unix socket's path within what every platform
// takes (104 bytes on macOS, 108 on Linux, the terminating NUL included).
const maxSocketPath = 100

// EngineSocket is the engine's unix socket: in the data directory when
// that path is short enough for a socket, else in SocketDir under a name
// derived from the data directory.
func (p Paths) EngineSocket() string {
	s := filepath.Join(p.Home, "engine.sock")
	if len(s) < maxSocketPath {
		return s
	}
	sum := sha256.Sum256([]byte(p.Home))
	return filepath.Join(p.SocketDir(), "sandbar-"+hex.EncodeToString(sum[:6])+".sock")
}

// SocketDir is where the engine's socket goes when the data directory's
// path is too long for one: Runtime, which Resolve sets to
// $XDG_RUNTIME_DIR (the person's own, 0700) when there is one, else to a
// directory of this user's in the temp directory (sandbar-<uid>). Either
// must be the person's alone: a socket in a directory others can write
// could be squatted by another user, who would then be the engine to
// every client. EnsureSocketDir and CheckSocketDir see to it.
func (p Paths) SocketDir() string {
	if p.Runtime != "" {
		return p.Runtime
	}
	return userTempDir(os.TempDir())
}

// userTempDir is this user's directory in the temp directory tmp.
func userTempDir(tmp string) string {
	return filepath.Join(tmp, "sandbar-"+strconv.Itoa(os.Getuid()))
}

// runtimeDir is Runtime for the environment env.
func runtimeDir(env Env) string {
	if dir := env("XDG_RUNTIME_DIR"); dir != "" && filepath.IsAbs(dir) {
		return dir
	}
	tmp := env("TMPDIR")
	if tmp == "" || !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	return userTempDir(tmp)
}

// EnsureSocketDir makes the directory of the engine's socket, where that
// is not the data directory (Ensure makes that one), and checks that it
// is the person's alone; the engine calls it before it listens.
func (p Paths) EnsureSocketDir() error {
	dir := filepath.Dir(p.EngineSocket())
	if dir == p.Home {
		return nil
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create the engine's socket directory %s: %w", dir, err)
	}
	return privateDir(dir, os.Getuid())
}

// CheckSocketDir checks, before a client connects, that the directory of
// the engine's socket is the person's alone; one that does not exist yet
// holds no socket to connect to, and is fine.
func (p Paths) CheckSocketDir() error {
	dir := filepath.Dir(p.EngineSocket())
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return privateDir(dir, os.Getuid())
}

// privateDir checks that dir is a directory (not a link to one) that user
// uid owns and no one else may enter or write.
func privateDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the engine's socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("the engine's socket directory %s is not a directory (%s): remove it, or set SANDBAR_HOME to a shorter path", dir, fi.Mode().Type())
	case !ok || int(st.Uid) != uid:
		owner := "unknown"
		if ok {
			owner = strconv.FormatUint(uint64(st.Uid), 10)
		}
		return fmt.Errorf("the engine's socket directory %s belongs to user %s, not to you (%d): another user may be impersonating the Sandbar engine; remove it, or set SANDBAR_HOME to a shorter path", dir, owner, uid)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("the engine's socket directory %s can be used by other users (mode %o): run chmod 700 on it, or set SANDBAR_HOME to a shorter path", dir, fi.Mode().Perm())
	}
	return nil
}
