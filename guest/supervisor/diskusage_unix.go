//go:build unix

package supervisor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// diskUsage returns used and total bytes of the file system holding path.
func diskUsage(path string) (used, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	total = uint64(st.Blocks) * bs
	return total - uint64(st.Bfree)*bs, total, nil
}
