//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbar/guest/protocol"
)

// A prepared environment is a read-only disk made once per project
// environment (see app/session/prepared.go) and shared by the project's
// sessions, each under its own writable layer:
//
//	root/       the changes the environment's setup made to the root: the
//	            overlay's upper folder of the machine that prepared it,
//	            whiteouts and opaque folders included. It goes between the
//	            session's layer and the image (sandbar.env).
//	workspace/  the ignored files the setup left in the workspace
//	            (node_modules, .venv, build caches), between the session's
//	            layer of /workspace and the clone.
//	capture.json  what capture copied (captureReport).
//
// It is made by a machine that runs nothing but this init (sandbar.capture):
// the preparing machine has powered off, its scratch disk is attached
// read-only, and the blank disk to fill beside it.
const (
	envStage     = "/envlayer"
	captureStage = "/capture"
	// prepareDir is the folder, at the root of the preparing machine,
	// where its last setup step leaves what the capture needs
	// (ignoredList); it is not copied.
	prepareDir = ".sandbar-prepare"
	// ignoredList lists the workspace's ignored paths, NUL-separated, as
	// git ls-files --others --ignored --exclude-standard --directory -z
	// prints them.
	ignoredList = "ignored"
	// maxIgnoredList bounds what capture reads of ignoredList.
	maxIgnoredList = 16 << 20
)

// captureReport is capture.json.
type captureReport struct {
	Files          int64     `json:"files"`
	Bytes          int64     `json:"bytes"`
	WorkspacePaths int       `json:"workspace_paths"`
	Skipped        []string  `json:"skipped,omitempty"`
	Made           time.Time `json:"made"`
}

// envLowers is the lower folders of the root's overlay: the prepared
// environment's root layer (when the disk holds one) over the image.
func envLowers(envMount, image string) string {
	if envMount != "" {
		if fi, err := os.Lstat(filepath.Join(envMount, "root")); err == nil && fi.IsDir() {
			return envMount + "/root:" + image
		}
	}
	return image
}

// workspaceLowers is the lower folders of the workspace's overlay: the
// prepared environment's ignored files (when the disk holds them) over
// the clone.
func workspaceLowers(envMount, clone string) string {
	if envMount != "" {
		if fi, err := os.Lstat(filepath.Join(envMount, "workspace")); err == nil && fi.IsDir() {
			return envMount + "/workspace:" + clone
		}
	}
	return clone
}

// runCapture fills the blank disk cfg.capture from the preparing
// machine's scratch disk cfg.scratch, mounted read-only, with Sandbar's
// own root (cfg.root) for mkfs.
func runCapture(c *console, cfg config) (captureReport, error) {
	var rep captureReport
	if cfg.root == "" || cfg.scratch == "" {
		return rep, errors.New("sandbar.capture needs sandbar.root (for mkfs) and sandbar.scratch (the preparing machine's disk)")
	}
	for _, d := range []string{cfg.root, cfg.scratch, cfg.capture} {
		if err := waitDevice(d, 5*time.Second); err != nil {
			return rep, err
		}
	}
	if err := (mountSpec{cfg.root, "/lower", "ext4", unix.MS_RDONLY, ""}).mount(); err != nil {
		return rep, err
	}
	const ro = unix.MS_RDONLY | unix.MS_NODEV | unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NOATIME
	if err := (mountSpec{cfg.scratch, "/scratch", "ext4", ro, ""}).mount(); err != nil {
		return rep, fmt.Errorf("%w (did the preparing machine shut down cleanly?)", err)
	}
	start := time.Now()
	if err := formatExt4(cfg.capture, "/lower", "sandbar-env"); err != nil {
		return rep, err
	}
	if err := (mountSpec{cfg.capture, captureStage, "ext4", unix.MS_NOATIME, ""}).mount(); err != nil {
		return rep, err
	}
	c.mark("capture disk formatted (%s in %dms)", cfg.capture, time.Since(start).Milliseconds())
	if err := os.Chmod(captureStage, 0o755); err != nil {
		return rep, err
	}
	os.Remove(filepath.Join(captureStage, "lost+found"))

	st, err := copyTree("/scratch/upper", filepath.Join(captureStage, "root"))
	if err != nil {
		return rep, fmt.Errorf("copy the root's changes: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(captureStage, "root", prepareDir)); err != nil {
		return rep, err
	}
	rep.Files, rep.Bytes = st.files, st.bytes
	c.mark("root's changes copied (%d files, %d MB)", st.files, st.bytes>>20)

	paths, err := readIgnored(filepath.Join("/scratch/upper", prepareDir, ignoredList))
	if err != nil {
		return rep, err
	}
	ws := filepath.Join(captureStage, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return rep, err
	}
	for _, p := range paths {
		n, err := copyIgnored(workspaceUpper, ws, p)
		if err != nil {
			return rep, fmt.Errorf("copy the workspace's %s: %w", p, err)
		}
		if n.files == 0 {
			rep.Skipped = append(rep.Skipped, p)
			continue
		}
		rep.WorkspacePaths++
		rep.Files += n.files
		rep.Bytes += n.bytes
	}
	c.mark("workspace's ignored files copied (%d paths)", rep.WorkspacePaths)
	rep.Made = time.Now().UTC()
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(filepath.Join(captureStage, "capture.json"), b, 0o644); err != nil {
		return rep, err
	}
	unix.Sync()
	if err := unix.Unmount(captureStage, 0); err != nil {
		return rep, fmt.Errorf("unmount the capture disk: %w", err)
	}
	return rep, nil
}

// readIgnored reads ignoredList: the workspace-relative paths, each
// checked to stay inside, outermost first, a path inside another left
// out.
func readIgnored(p string) ([]string, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIgnoredList+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxIgnoredList {
		return nil, fmt.Errorf("the list of the workspace's ignored files is over %d MB", maxIgnoredList>>20)
	}
	var out []string
	for _, raw := range bytes.Split(b, []byte{0}) {
		p := strings.TrimSuffix(string(raw), "/")
		if p == "" || !filepath.IsLocal(p) || filepath.Clean(p) != p || p == ".git" || strings.HasPrefix(p, ".git/") {
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	kept := out[:0]
	for _, p := range out {
		if n := len(kept); n > 0 && strings.HasPrefix(p, kept[n-1]+"/") {
			continue
		}
		kept = append(kept, p)
	}
	return kept, nil
}

// copyIgnored copies rel from the workspace layer upper to dst, making
// its parent folders as upper has them. Nothing is copied (no error) when
// rel is not in upper, or when one of its parents there is no folder: a
// symlink on the way is never followed.
func copyIgnored(upper, dst, rel string) (copyStats, error) {
	parts := strings.Split(rel, "/")
	from, to := upper, dst
	for _, part := range parts[:len(parts)-1] {
		from, to = filepath.Join(from, part), filepath.Join(to, part)
		var s unix.Stat_t
		if err := unix.Lstat(from, &s); err != nil || s.Mode&unix.S_IFMT != unix.S_IFDIR {
			return copyStats{}, nil
		}
		if err := os.Mkdir(to, 0o755); errors.Is(err, fs.ErrExist) {
			continue
		} else if err != nil {
			return copyStats{}, err
		}
		if err := unix.Lchown(to, int(s.Uid), int(s.Gid)); err != nil {
			return copyStats{}, err
		}
		if err := os.Chmod(to, os.FileMode(s.Mode&0o777)); err != nil {
			return copyStats{}, err
		}
	}
	from, to = filepath.Join(from, parts[len(parts)-1]), filepath.Join(to, parts[len(parts)-1])
	if _, err := os.Lstat(from); err != nil {
		return copyStats{}, nil
	}
	return copyTree(from, to)
}

// captureMarker starts the line a capture prints on the console when
// it is done: the host reads it as success.
func captureMarker(rep captureReport) string {
	return fmt.Sprintf("%s files=%d bytes=%d workspace_paths=%d", protocol.CaptureMarker, rep.Files, rep.Bytes, rep.WorkspacePaths)
}
