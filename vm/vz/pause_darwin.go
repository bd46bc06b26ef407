//go:build darwin

package vz

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	vzapi "github.com/Code-Hex/vz/v3"

	"sandbar/vm"
)

var _ vm.DiskPauser = (*machine)(nil)

// Virtualization.framework never pauses a guest whose disk image finds
// the host's disk full: the write fails in the guest as an I/O error,
// which its file system takes for a broken disk. So the host pauses the
// VM itself when the file system holding a writable disk image has less
// than lowWater free, before the guest's writes fail, and reports it as
// QEMU's pause is reported (vm.DiskPauser). Resume runs it again; where
// room is still short it pauses again at the next look, as QEMU does at
// the next write.
const (
	lowWater  = 64 << 20
	spacePoll = time.Second
)

// DiskEvents: see vm.DiskPauser.
func (m *machine) DiskEvents() <-chan vm.DiskEvent { return m.diskEvents }

// Resume runs a VM the space watch paused.
func (m *machine) Resume(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case m.resumeReq <- reply:
	case <-m.exit.Done():
		return vm.ErrNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchSpace owns diskEvents (closing it when the VM has stopped) and the
// pauses it makes: it looks at the free space beside each writable disk
// image every spacePoll.
func (m *machine) watchSpace() {
	defer close(m.diskEvents)
	var dirs []string
	for _, d := range m.plan.Disks {
		if dir := filepath.Dir(d.Path); !d.ReadOnly && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	tick := time.NewTicker(spacePoll)
	defer tick.Stop()
	paused := false
	for {
		select {
		case <-m.exit.Done():
			return
		case reply := <-m.resumeReq:
			err := fmt.Errorf("the VM is %v, not paused", m.vm.State())
			if m.vm.CanResume() {
				err = m.vm.Resume()
			}
			if err == nil && paused {
				paused = false
				vm.SendLatest(m.diskEvents, vm.DiskEvent{Time: time.Now()})
			}
			reply <- err
		case <-tick.C:
			if paused || len(dirs) == 0 || m.vm.State() != vzapi.VirtualMachineStateRunning {
				continue
			}
			for _, dir := range dirs {
				var st syscall.Statfs_t
				if syscall.Statfs(dir, &st) != nil || uint64(st.Bavail)*uint64(st.Bsize) >= lowWater {
					continue
				}
				if !m.vm.CanPause() {
					break
				}
				if err := m.vm.Pause(); err != nil {
					m.log.Warn("pause the VM on a full disk", "dir", dir, "err", err)
					break
				}
				paused = true
				m.log.Warn("paused the VM: the disk holding its disk images is full", "dir", dir)
				vm.SendLatest(m.diskEvents, vm.DiskEvent{Paused: true, NoSpace: true, Time: time.Now()})
				break
			}
		}
	}
}
