package ociimage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Store keeps pulled images under Dir, one directory per digest:
//
//	Dir/sha256-<hex>/rootfs.ext4  the image's root, read-only ext4
//	Dir/sha256-<hex>/image.json   what Image says about it
//	Dir/sha256-<hex>/last-use     its modification time is the last use
//	Dir/locks/sha256-<hex>.lock   held while one process pulls or removes it
//	Dir/tmp/                      pulls in progress, renamed into place when done
//
// A digest's directory appears whole or not at all, so a reader never sees
// half an image. Several processes may share one Store.
type Store struct {
	Dir string
}

// Image is one image in the store.
type Image struct {
	// Ref is the reference it was pulled by (the first, when several
	// references name the same digest).
	Ref string `json:"ref"`
	// Digest is the manifest digest of the platform image the reference
	// resolved to; for an image taken from a local Docker or Podman, its
	// image ID (the config's digest), which is what those tools know.
	Digest string `json:"digest"`
	// Platform is os/arch[/variant] of the image.
	Platform string `json:"platform"`
	// Source is "registry", "docker" or "podman".
	Source string `json:"source"`
	// Path is the read-only ext4 file of its root.
	Path string `json:"-"`
	// Size is the size of that file in bytes.
	Size int64 `json:"size"`
	// Config is what the image asks of a process run in it.
	Config Config `json:"config"`
	// Pulled is when it was written into the store.
	Pulled time.Time `json:"pulled"`
	// LastUse is when it was last pulled, found or touched.
	LastUse time.Time `json:"-"`
}

// Config is the part of an image's configuration a session uses.
type Config struct {
	Env        []string          `json:"env,omitempty"`
	User       string            `json:"user,omitempty"`
	WorkingDir string            `json:"workingDir,omitempty"`
	Entrypoint []string          `json:"entrypoint,omitempty"`
	Cmd        []string          `json:"cmd,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// The files of one image's directory.
const (
	rootfsName  = "rootfs.ext4"
	metaName    = "image.json"
	lastUseName = "last-use"
	locksDir    = "locks"
	tmpDir      = "tmp"
)

var digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// key is a digest as a file name: sha256:ab.. becomes sha256-ab...
func key(digest string) (string, error) {
	if !digestRE.MatchString(digest) {
		return "", fmt.Errorf("%q is not an image digest: expected sha256: and 64 hex digits", digest)
	}
	return strings.Replace(digest, ":", "-", 1), nil
}

func (s *Store) dir(k string) string { return filepath.Join(s.Dir, k) }

func (s *Store) check() error {
	if s == nil || s.Dir == "" {
		return errors.New("ociimage: the store has no directory")
	}
	return nil
}

// ErrNotStored is returned by Get, Touch and Remove for a digest the store
// does not hold.
var ErrNotStored = errors.New("image not in the store")

// Get returns the stored image with this digest, or an error wrapping
// ErrNotStored.
func (s *Store) Get(digest string) (Image, error) {
	if err := s.check(); err != nil {
		return Image{}, err
	}
	k, err := key(digest)
	if err != nil {
		return Image{}, err
	}
	return s.load(k)
}

func (s *Store) load(k string) (Image, error) {
	d := s.dir(k)
	b, err := os.ReadFile(filepath.Join(d, metaName))
	if errors.Is(err, fs.ErrNotExist) {
		return Image{}, fmt.Errorf("%s: %w", strings.Replace(k, "-", ":", 1), ErrNotStored)
	}
	if err != nil {
		return Image{}, fmt.Errorf("read image %s: %w", d, err)
	}
	var img Image
	if err := json.Unmarshal(b, &img); err != nil {
		return Image{}, fmt.Errorf("read image %s: %s is damaged (%v): remove the image and pull it again", d, metaName, err)
	}
	img.Path = filepath.Join(d, rootfsName)
	fi, err := os.Stat(img.Path)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", d, err)
	}
	img.Size = fi.Size()
	img.LastUse = img.Pulled
	if fi, err := os.Stat(filepath.Join(d, lastUseName)); err == nil {
		img.LastUse = fi.ModTime()
	}
	return img, nil
}

// List returns every stored image, the most recently used first.
func (s *Store) List() ([]Image, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list images in %s: %w", s.Dir, err)
	}
	var out []Image
	for _, e := range ents {
		k := e.Name()
		if !e.IsDir() || !digestRE.MatchString(strings.Replace(k, "-", ":", 1)) {
			continue
		}
		img, err := s.load(k)
		if errors.Is(err, ErrNotStored) {
			continue // removed while we looked
		}
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastUse.After(out[j].LastUse) })
	return out, nil
}

// Touch records a use of the image now, for pruning by last use.
func (s *Store) Touch(digest string) error {
	if _, err := s.Get(digest); err != nil {
		return err
	}
	k, _ := key(digest)
	return touch(filepath.Join(s.dir(k), lastUseName))
}

func touch(p string) error {
	now := time.Now()
	if err := os.Chtimes(p, now, now); err == nil {
		return nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("record the use of %s: %w", filepath.Dir(p), err)
	}
	f.Close()
	return os.Chtimes(p, now, now)
}

// Remove deletes the stored image with this digest. A session booted on
// it keeps its open file; the caller decides whether any still needs it.
func (s *Store) Remove(ctx context.Context, digest string) error {
	if err := s.check(); err != nil {
		return err
	}
	k, err := key(digest)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx, k)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(s.dir(k), metaName)); err != nil {
		return fmt.Errorf("remove %s: %w", digest, ErrNotStored)
	}
	// Out of its place first, so the image disappears whole.
	tmp, err := s.tempDir("removed-" + k)
	if err != nil {
		return err
	}
	gone := filepath.Join(tmp, k)
	if err := os.Rename(s.dir(k), gone); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("remove image %s: %w", digest, err)
	}
	syncDir(s.Dir)
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove image %s: %w", digest, err)
	}
	return nil
}

// tempDir makes a directory under Dir/tmp, on the store's file system so
// that its contents can be renamed into place.
func (s *Store) tempDir(prefix string) (string, error) {
	t := filepath.Join(s.Dir, tmpDir)
	if err := os.MkdirAll(t, 0o700); err != nil {
		return "", diskErr(s.Dir, fmt.Errorf("make %s: %w", t, err))
	}
	d, err := os.MkdirTemp(t, prefix+"-")
	if err != nil {
		return "", diskErr(s.Dir, fmt.Errorf("make a directory in %s: %w", t, err))
	}
	return d, nil
}

// cleanTemp removes what an interrupted pull of k left behind. The caller
// holds k's lock, so nobody is writing there.
func (s *Store) cleanTemp(k string) {
	ms, _ := filepath.Glob(filepath.Join(s.Dir, tmpDir, "*"+k+"-*"))
	for _, m := range ms {
		os.RemoveAll(m)
	}
}

// lock takes the per-digest lock, a file lock so that the engine and a
// CLI pulling the same image at once wait for each other. It waits until
// ctx is done.
func (s *Store) lock(ctx context.Context, k string) (func(), error) {
	d := filepath.Join(s.Dir, locksDir)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, diskErr(s.Dir, fmt.Errorf("make %s: %w", d, err))
	}
	p := filepath.Join(d, k+".lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, diskErr(s.Dir, fmt.Errorf("open %s: %w", p, err))
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for another pull of %s: %w", strings.Replace(k, "-", ":", 1), ctx.Err())
		case <-t.C:
		}
	}
}

// syncDir makes a rename in d durable; a failure only costs durability
// after a crash, which the next pull repairs.
func syncDir(d string) {
	f, err := os.Open(d)
	if err != nil {
		return
	}
	f.Sync()
	f.Close()
}
