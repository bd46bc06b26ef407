//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sandbar/guest/supervisor"
)

// toolsStage is where Sandbar's own root disk is mounted while the root
// is being assembled, when the root is another image's (sandbar.tools).
const toolsStage = "/tools"

// toolsRoot is where Sandbar's own root is in the image's root.
const toolsRoot = supervisor.ToolRoot

// moveTools moves Sandbar's own root from toolsStage to
// toolsRoot under newRoot, the image's root being assembled.
func moveTools(newRoot string) error {
	target := filepath.Join(newRoot, toolsRoot)
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("make %s in the image's root: %w", toolsRoot, err)
	}
	if err := unix.Mount(toolsStage, target, "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move Sandbar's own root to %s: %w", toolsRoot, err)
	}
	// What every image is expected to have, made if it has not.
	for _, d := range []string{"etc", "home", "tmp", "workspace"} {
		if err := os.MkdirAll(filepath.Join(newRoot, d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// toolBinds are the session's folders the supervisor's tools see inside
// Sandbar's own root (toolsRoot): the clone, the agent's home
// (its git configuration: safe directories), scratch files, and the
// kernel's. Sandbar's root has each as an empty folder to mount on.
var toolBinds = []struct {
	dir       string
	recursive bool
}{
	{"/proc", false},
	{"/dev", true}, // with /dev/pts and /dev/shm
	{"/tmp", false},
	{"/home", false},
	{"/workspace", true}, // the overlay, or the share
}

// bindTools mounts toolBinds into Sandbar's own root, once the image's
// root is / and the workspace is mounted.
func bindTools() error {
	for _, b := range toolBinds {
		flags := uintptr(unix.MS_BIND)
		if b.recursive {
			flags |= unix.MS_REC
		}
		if err := unix.Mount(b.dir, filepath.Join(toolsRoot, b.dir), "", flags, ""); err != nil {
			return fmt.Errorf("bind %s into Sandbar's own root: %w", b.dir, err)
		}
	}
	return nil
}
