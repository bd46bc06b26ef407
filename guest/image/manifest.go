package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// inputs is the canonical encoding of what an image is built from. Its
// fields are fixed in order by the struct, so encoding/json is canonical.
type inputs struct {
	Builder    int          `json:"builder"`
	Arch       string       `json:"arch"`
	Suite      string       `json:"suite"`
	Kernel     KernelRef    `json:"kernel"`
	Modules    []string     `json:"modules"`
	Packages   []PackageRef `json:"packages"`
	Agent      AgentSpec    `json:"agent"`
	InitSHA256 string       `json:"init_sha256"`
}

// ComputeHash returns the hash of m's inputs: the same inputs give the same
// hash, and a change to any of them gives another. Outputs (Sizes, BuiltAt,
// BuildSeconds) and Hash itself are ignored.
func (m *Manifest) ComputeHash() string {
	in := inputs{
		Builder:    m.Builder,
		Arch:       m.Arch,
		Suite:      m.Suite,
		Kernel:     m.Kernel,
		Modules:    m.Modules,
		Packages:   m.Packages,
		Agent:      m.Agent,
		InitSHA256: m.InitSHA256,
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Only strings, ints and slices of them: cannot fail.
		panic(fmt.Sprintf("encode image inputs: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// imageFiles are the files of a complete image besides the manifest.
func imageFiles() []string { return []string{KernelFile, InitramfsFile, RootFSFile, AgentFile} }

// Open returns the complete image <dir>/<hash>: its manifest is readable,
// names hash and matches its inputs, and every file is present with the
// size the manifest recorded.
func Open(dir, hash string) (*Image, error) {
	if !validHash(hash) {
		return nil, fmt.Errorf("open image %q: not an image hash", hash)
	}
	d := filepath.Join(dir, hash)
	b, err := os.ReadFile(filepath.Join(d, ManifestFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open image %s: %w", hash, ErrNotBuilt)
		}
		return nil, fmt.Errorf("open image %s: %w", hash, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("open image %s: bad manifest: %w; rebuild it with `sandbar image build`", hash, err)
	}
	if m.Hash != hash || m.ComputeHash() != hash {
		return nil, fmt.Errorf("open image %s: manifest does not match its directory; rebuild it with `sandbar image build`", hash)
	}
	img := &Image{
		Dir:       d,
		Kernel:    filepath.Join(d, KernelFile),
		Initramfs: filepath.Join(d, InitramfsFile),
		RootFS:    filepath.Join(d, RootFSFile),
		AgentDisk: filepath.Join(d, AgentFile),
		Manifest:  m,
	}
	for _, name := range imageFiles() {
		fi, err := os.Stat(filepath.Join(d, name))
		if err != nil {
			return nil, fmt.Errorf("open image %s: %w; rebuild it with `sandbar image build`", hash, err)
		}
		if want, ok := m.Sizes[name]; ok && fi.Size() != want {
			return nil, fmt.Errorf("open image %s: %s is %d bytes, manifest says %d; rebuild it with `sandbar image build`", hash, name, fi.Size(), want)
		}
	}
	return img, nil
}

// Latest returns the newest complete image in dir: the one named by the
// current file when it is complete, else the complete image built last.
// It returns an error wrapping ErrNotBuilt when there is none.
func Latest(dir string) (*Image, error) {
	if b, err := os.ReadFile(filepath.Join(dir, currentFile)); err == nil {
		if img, err := Open(dir, strings.TrimSpace(string(b))); err == nil {
			return img, nil
		}
	}
	imgs, err := List(dir)
	if err != nil {
		return nil, err
	}
	if len(imgs) == 0 {
		return nil, ErrNotBuilt
	}
	return imgs[0], nil
}

// List returns the complete images in dir, newest first. Incomplete or
// damaged image directories are left out; a missing dir is no images.
func List(dir string) ([]*Image, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list images in %s: %w", dir, err)
	}
	var imgs []*Image
	for _, e := range entries {
		if !e.IsDir() || !validHash(e.Name()) {
			continue
		}
		img, err := Open(dir, e.Name())
		if err != nil {
			continue
		}
		imgs = append(imgs, img)
	}
	sort.Slice(imgs, func(i, j int) bool { return imgs[i].Manifest.BuiltAt.After(imgs[j].Manifest.BuiltAt) })
	return imgs, nil
}

// setCurrent records hash as the newest image, atomically.
func setCurrent(dir, hash string) error {
	f, err := os.CreateTemp(dir, ".current-*")
	if err != nil {
		return fmt.Errorf("record current image: %w", err)
	}
	_, werr := f.WriteString(hash + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(dir, currentFile))
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("record current image: %w", werr)
	}
	return nil
}

// writeManifest writes m as dir/manifest.json.
func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

func validHash(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}
