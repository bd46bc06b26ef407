package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DiskUsage is, for each folder under sessions/, the bytes its files take
// on disk (allocated blocks, so a sparse scratch disk counts what it
// holds, not its size). Files with other hard links are left out:
// removing the session frees nothing of them.
func (m *Manager) DiskUsage(ctx context.Context) (map[string]int64, error) {
	return sessionDiskUsage(ctx, m.cfg.Paths.Sessions())
}

func sessionDiskUsage(ctx context.Context, dir string) (map[string]int64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions in %s: %w", dir, err)
	}
	out := make(map[string]int64, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var total int64
		err := filepath.WalkDir(filepath.Join(dir, e.Name()), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // gone or unreadable: nothing to count
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				if !d.IsDir() && st.Nlink > 1 {
					return nil
				}
				total += int64(st.Blocks) * 512
			} else {
				total += info.Size()
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out[e.Name()] = total
	}
	return out, nil
}

// AgentLog is the file that holds every line of session ref's agent log.
func (m *Manager) AgentLog(ctx context.Context, ref string) (string, error) {
	s, err := m.Get(ctx, ref)
	if err != nil {
		return "", err
	}
	return m.cfg.Paths.SessionDir(s.ID).AgentLog(), nil
}
