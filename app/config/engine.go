package config

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
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
// that path is short enough for a socket, else in the temp directory
// under a name derived from the data directory.
func (p Paths) EngineSocket() string {
	s := filepath.Join(p.Home, "engine.sock")
	if len(s) < maxSocketPath {
		return s
	}
	sum := sha256.Sum256([]byte(p.Home))
	return filepath.Join(os.TempDir(), "sandbar-"+hex.EncodeToString(sum[:6])+".sock")
}
