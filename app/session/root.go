package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"sandbar/app/sandbox"
)

// RootImage is an image's root file system for a session's agent to run
// on instead of Sandbar's own Debian image (Options.Root): a project's
// environment. Sandbar's kernel, init and supervisor stay Sandbar's, and
// so do the tools that save the work and show its changes (git): Sandbar's
// own root is attached beside the image's, read-only. The agent runs as
// a non-root user (see protocol.ImageConfig.User for which); an image
// whose libc is musl is refused before the agent starts.
type RootImage struct {
	// Path is the read-only ext4 file of the image's root (as
	// app/env/ociimage writes one per image digest). It is never written:
	// the session's changes to the root go to its own scratch disk.
	Path string `json:"path"`
	// Name and Digest say which image it is, for the session's log
	// (docker.io/library/node:22, sha256:…); both optional.
	Name   string `json:"name,omitempty"`
	Digest string `json:"digest,omitempty"`
	// User is the account the image's programs run as (the image
	// config's User, or a devcontainer's remoteUser/containerUser).
	User string `json:"user,omitempty"`
	// Env is the image config's environment, KEY=VALUE; its PATH comes
	// before Sandbar's own entries in the agent's.
	Env []string `json:"env,omitempty"`
	// WorkingDir is the image config's; the agent works in the
	// repository at /workspace all the same, and the log says so.
	WorkingDir string `json:"working_dir,omitempty"`
}

// Bounds of a RootImage, as the guest takes it.
const (
	maxRootEnv  = 256
	maxRootText = 4096
)

// check refuses a RootImage the guest cannot boot, with what to do.
func (ri *RootImage) check() error {
	if ri.Path == "" {
		return fmt.Errorf("the environment's root image has no path: give the ext4 file of an image: %w", ErrBadOptions)
	}
	if !filepath.IsAbs(ri.Path) {
		return fmt.Errorf("the environment's root image %q is not an absolute path: %w", ri.Path, ErrBadOptions)
	}
	if len(ri.Env) > maxRootEnv {
		return fmt.Errorf("the environment's image sets %d variables, more than %d: %w", len(ri.Env), maxRootEnv, ErrBadOptions)
	}
	for _, v := range append([]string{ri.User, ri.WorkingDir, ri.Name, ri.Digest}, ri.Env...) {
		if len(v) > maxRootText || strings.ContainsRune(v, 0) {
			return fmt.Errorf("the environment's image has a value longer than %d bytes or holding a NUL: %w", maxRootText, ErrBadOptions)
		}
	}
	if err := sandbox.CheckRoot(ri.Path); err != nil {
		return fmt.Errorf("%v: %w", err, ErrBadOptions)
	}
	return nil
}

// label is how the session's log names the image.
func (ri *RootImage) label() string {
	s := ri.Name
	if s == "" {
		s = filepath.Base(ri.Path)
	}
	if ri.Digest != "" {
		s += " (" + ri.Digest + ")"
	}
	return s
}

// image is what the guest's start takes of it.
func (ri *RootImage) image() *sandbox.ImageConfig {
	return &sandbox.ImageConfig{User: ri.User, Env: ri.Env, WorkingDir: ri.WorkingDir}
}

// writeRootImage records ri in the session's directory, for every boot
// of the session (a restart boots the same root).
func writeRootImage(path string, ri *RootImage) error {
	b, err := json.Marshal(ri)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("record the session's environment: %w", err)
	}
	return nil
}

// readRootImage reads what writeRootImage recorded; nil when the session
// runs on Sandbar's own root.
func readRootImage(path string) (*RootImage, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the session's environment: %w", err)
	}
	defer f.Close()
	var ri RootImage
	if err := json.NewDecoder(f).Decode(&ri); err != nil {
		return nil, fmt.Errorf("read the session's environment %s: %w: start a new session", path, err)
	}
	return &ri, nil
}
