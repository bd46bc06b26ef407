package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// NetworkFile is the repository's network rules for its sessions (see
// app/net/policy), relative to its root.
const NetworkFile = ".sandbar/network"

// maxNetworkFile bounds NetworkFile.
const maxNetworkFile = 1 << 20

// ReadNetworkFile reads the source repository's NetworkFile from its
// working tree: the person's own file, read on the host before the
// session starts, so the agent cannot change it for its own session. It
// returns nil when there is none; a symlink on the way, a FIFO, a device
// or a file over 1 MiB is an error saying so.
func ReadNetworkFile(root string) ([]byte, error) {
	dir := filepath.Join(root, ".sandbar")
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", NetworkFile, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("%s: .sandbar is not a folder (a symlink is not followed): make it one or remove it", NetworkFile)
	}
	data, err := readRegular(filepath.Join(root, filepath.FromSlash(NetworkFile)), maxNetworkFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: it must be a plain file of at most 1 MiB", NetworkFile, err)
	}
	return data, nil
}
