package sandbox

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// ext4 superblock: 1024 bytes into the disk, its magic 56 bytes into it.
const (
	superblockOffset = 1024
	ext4MagicOffset  = 56
	ext4Magic        = 0xEF53
)

// CheckRoot says whether path can be a guest's root disk (Options.Root):
// a regular file holding an ext4 file system. It reads only the
// superblock's magic; what the file system holds is the guest's to judge.
func CheckRoot(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("the environment's root disk %s: %w: pull or build the environment again", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("the environment's root disk %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("the environment's root disk %s is not a regular file: give the ext4 file of an image", path)
	}
	var magic [2]byte
	if _, err := f.ReadAt(magic[:], superblockOffset+ext4MagicOffset); err != nil && err != io.EOF {
		return fmt.Errorf("read the environment's root disk %s: %w", path, err)
	}
	if binary.LittleEndian.Uint16(magic[:]) != ext4Magic {
		return fmt.Errorf("the environment's root disk %s is not an ext4 file system: give the ext4 file of an image (pull or build the environment again)", path)
	}
	return nil
}
