//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

type mountSpec struct {
	source, target, fstype string
	flags                  uintptr
	data                   string
}

func (m mountSpec) mount() error {
	if err := os.MkdirAll(m.target, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(m.source, m.target, m.fstype, m.flags, m.data); err != nil {
		return fmt.Errorf("mount %s on %s (%s): %w", m.source, m.target, m.fstype, err)
	}
	return nil
}

// mountEarly mounts what every later step needs.
func mountEarly() error {
	const nosuid, nodev, noexec = unix.MS_NOSUID, unix.MS_NODEV, unix.MS_NOEXEC
	for _, m := range []mountSpec{
		{"proc", "/proc", "proc", nosuid | nodev | noexec, ""},
		{"sysfs", "/sys", "sysfs", nosuid | nodev | noexec, ""},
		{"devtmpfs", "/dev", "devtmpfs", nosuid, "mode=0755"},
		{"devpts", "/dev/pts", "devpts", nosuid | noexec, "gid=5,mode=0620,ptmxmode=0666"},
		{"tmpfs", "/dev/shm", "tmpfs", nosuid | nodev, "mode=1777"},
		{"tmpfs", "/tmp", "tmpfs", nosuid | nodev, "mode=1777"},
		{"tmpfs", "/run", "tmpfs", nosuid | nodev, "mode=0755"},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", nosuid | nodev | noexec, ""},
	} {
		if err := m.mount(); err != nil {
			return err
		}
	}
	// /dev/ptmx for pseudo-terminals when devtmpfs lacks the link.
	if _, err := os.Lstat("/dev/ptmx"); errors.Is(err, os.ErrNotExist) {
		os.Symlink("pts/ptmx", "/dev/ptmx")
	}
	return nil
}

// waitDevice polls for a block device to appear: module loading probes
// virtio devices asynchronously.
func waitDevice(p string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		_, err := os.Stat(p)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v: check the disk is attached", p, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// agentStage is where the agent disk is mounted while the root is being
// assembled, before it moves into the new root.
const agentStage = "/agent"

// assembleRoot builds the overlay root at /newroot and switches to it.
// The agent disk mounts beside the root disk: each mount mostly waits on
// its disk (~20 ms under emulation), and the two waits overlap.
func assembleRoot(c *console, cfg config) error {
	var agent, tools chan error
	if cfg.tools != "" {
		// Sandbar's own root, beside another image's: read-only, and
		// nosuid, so its sudo is never the way to root in an image that
		// has none of its own.
		tools = make(chan error, 1)
		go func() {
			if err := waitDevice(cfg.tools, 5*time.Second); err != nil {
				tools <- err
				return
			}
			tools <- mountSpec{cfg.tools, toolsStage, "ext4", unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV, ""}.mount()
		}()
	}
	if cfg.agent != "" {
		agent = make(chan error, 1)
		go func() {
			if err := waitDevice(cfg.agent, 5*time.Second); err != nil {
				agent <- err
				return
			}
			agent <- mountSpec{cfg.agent, agentStage, "ext4", unix.MS_RDONLY, ""}.mount()
		}()
	}
	if err := waitDevice(cfg.root, 5*time.Second); err != nil {
		return err
	}
	if err := (mountSpec{cfg.root, "/lower", "ext4", unix.MS_RDONLY, ""}).mount(); err != nil {
		return err
	}
	c.mark("root mounted (%s)", cfg.root)
	envMount := ""
	if cfg.env != "" {
		if err := waitDevice(cfg.env, 5*time.Second); err != nil {
			return err
		}
		if err := (mountSpec{cfg.env, envStage, "ext4", unix.MS_RDONLY | unix.MS_NOATIME, ""}).mount(); err != nil {
			return fmt.Errorf("the prepared environment's disk: %w", err)
		}
		envMount = envStage
		c.mark("prepared environment mounted (%s)", cfg.env)
	}

	mkfsRoot := "/lower"
	if tools != nil {
		if err := <-tools; err != nil {
			return err
		}
		c.mark("Sandbar's own root mounted for its tools (%s)", cfg.tools)
		mkfsRoot = toolsStage
	}
	if cfg.scratch != "" {
		if err := mountScratch(c, cfg.scratch, mkfsRoot); err != nil {
			return err
		}
	} else if err := (mountSpec{"tmpfs", "/scratch", "tmpfs", 0, "mode=0755"}).mount(); err != nil {
		return err
	}
	for _, d := range []string{"/scratch/upper", "/scratch/work"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := (mountSpec{"overlay", "/newroot", "overlay", 0,
		"lowerdir=" + envLowers(envMount, "/lower") + ",upperdir=/scratch/upper,workdir=/scratch/work"}).mount(); err != nil {
		return err
	}
	if tools != nil {
		if err := moveTools("/newroot"); err != nil {
			return err
		}
	}
	if cfg.workspace != "" {
		if err := mountWorkspace(c, cfg.workspace, "/newroot/workspace", envMount); err != nil {
			return err
		}
	}
	if agent != nil {
		if err := <-agent; err != nil {
			return err
		}
		const target = "/newroot/opt/agent"
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(agentStage, target, "", unix.MS_MOVE, ""); err != nil {
			return fmt.Errorf("move the agent disk to %s: %w", target, err)
		}
		c.mark("agent disk mounted (%s)", cfg.agent)
	}
	if err := switchRoot("/newroot"); err != nil {
		return err
	}
	c.mark("switched to the overlay root")
	return nil
}

// Where the workspace's layers live: the base disk is mounted read-only
// in the initramfs (it stays reachable through the overlay after the
// switch), the session's own layer on the scratch disk.
const (
	workspaceBase = "/wsbase"
	// workspaceRoot is the base disk's folder that holds the clone
	// (workspace.BaseRoot on the host).
	workspaceRoot  = "repo"
	workspaceUpper = "/scratch/workspace/upper"
	workspaceWork  = "/scratch/workspace/work"
	// agentUID owns the workspace's top folder, as it owns every file of
	// the base disk: the supervisor runs the agent as that owner.
	agentUID = 1000
)

// mountWorkspace mounts the session's clone at target: the read-only base
// disk dev (the same for every session at that commit) under a writable
// layer on the scratch disk, which keeps the session's changes across
// reboots. The agent writes only that layer: the base disk is read-only
// to the hypervisor as well.
func mountWorkspace(c *console, dev, target, envMount string) error {
	if err := waitDevice(dev, 5*time.Second); err != nil {
		return err
	}
	if err := (mountSpec{dev, workspaceBase, "ext4", unix.MS_RDONLY | unix.MS_NOATIME | unix.MS_NODEV | unix.MS_NOSUID, ""}).mount(); err != nil {
		return err
	}
	for _, d := range []string{workspaceUpper, workspaceWork} {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			if d == workspaceUpper {
				if err := os.Chown(d, agentUID, agentUID); err != nil {
					return err
				}
			}
		}
	}
	if err := (mountSpec{"overlay", target, "overlay", unix.MS_NODEV | unix.MS_NOSUID,
		"lowerdir=" + workspaceLowers(envMount, workspaceBase+"/"+workspaceRoot) + ",upperdir=" + workspaceUpper + ",workdir=" + workspaceWork}).mount(); err != nil {
		return err
	}
	c.mark("workspace mounted (%s)", dev)
	return nil
}

// mountScratch mounts the writable scratch disk at /scratch, formatting it
// first when it is blank (a new session's sparse file).
func mountScratch(c *console, dev, mkfsRoot string) error {
	if err := waitDevice(dev, 5*time.Second); err != nil {
		return err
	}
	ok, err := hasExt4Superblock(dev)
	if err != nil {
		return err
	}
	if !ok {
		start := time.Now()
		if err := formatScratch(dev, mkfsRoot); err != nil {
			return err
		}
		c.mark("scratch formatted (%s in %dms)", dev, time.Since(start).Milliseconds())
	}
	if err := (mountSpec{dev, "/scratch", "ext4", unix.MS_NOATIME, ""}).mount(); err != nil {
		return err
	}
	// The agent's work sits in the page cache for 30 s by default before
	// it reaches the disk; a killed VM (its engine killed, the host
	// crashed) would lose that much. Write it back within 2 s.
	for k, v := range map[string]string{"dirty_expire_centisecs": "200", "dirty_writeback_centisecs": "100"} {
		if err := os.WriteFile("/proc/sys/vm/"+k, []byte(v), 0); err != nil {
			c.debugf("set vm.%s: %v", k, err)
		}
	}
	return nil
}

// formatScratch runs mkfs.ext4 of the root at mkfsRoot (the root image's,
// or Sandbar's own beside another image's root, which may have none)
// chrooted there, so the initramfs carries no filesystem tools. The
// scratch disk holds the session's clone (the workspace's writable
// layer), which must survive a VM that is killed: it has a journal
// (initialised lazily, so formatting stays quick) and no blocks reserved
// for root.
func formatScratch(dev, mkfsRoot string) error {
	return formatExt4(dev, mkfsRoot, "sandbar-scratch")
}

// formatExt4 formats dev as ext4 labelled label with the mkfs.ext4 of the
// root at mkfsRoot.
func formatExt4(dev, mkfsRoot, label string) error {
	if err := unix.Mount("/dev", mkfsRoot+"/dev", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind /dev into the root for mkfs: %w", err)
	}
	defer unix.Unmount(mkfsRoot+"/dev", unix.MNT_DETACH)
	cmd := exec.Command("/usr/sbin/mkfs.ext4", "-q", "-F", "-m", "0",
		"-E", "lazy_itable_init=1,lazy_journal_init=1", "-L", label, dev)
	cmd.SysProcAttr = &unix.SysProcAttr{Chroot: mkfsRoot}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("format the disk %s with the root image's mkfs.ext4 (is e2fsprogs in the image?): %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// switchRoot moves the kernel filesystems into newRoot and makes it /. The
// initramfs stays underneath: it is small and freeing it is not worth the
// code.
func switchRoot(newRoot string) error {
	for _, d := range []string{"/dev", "/proc", "/sys", "/run", "/tmp"} {
		target := filepath.Join(newRoot, d)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(d, target, "", unix.MS_MOVE, ""); err != nil {
			return fmt.Errorf("move %s into the new root: %w", d, err)
		}
	}
	if err := os.Chdir(newRoot); err != nil {
		return err
	}
	if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move the new root onto /: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("chroot into the new root: %w", err)
	}
	return os.Chdir("/")
}

// mountShare mounts the host's workspace share, tag "workspace", at
// /workspace.
func mountShare(kind string) error {
	switch kind {
	case "virtiofs":
		return mountSpec{"workspace", "/workspace", "virtiofs", 0, ""}.mount()
	case "9p":
		return mountSpec{"workspace", "/workspace", "9p", 0,
			"trans=virtio,version=9p2000.L,msize=512000,cache=mmap,access=client"}.mount()
	}
	return nil
}

// unmountAll unmounts everything in /proc/self/mounts, deepest first,
// ignoring failures (busy kernel filesystems, the root).
func unmountAll(c *console) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return
	}
	var targets []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 2 {
			targets = append(targets, fields[1])
		}
	}
	f.Close()
	slices.Reverse(targets)
	for _, t := range targets {
		if err := unix.Unmount(t, 0); err != nil {
			c.debugf("unmount %s: %v", t, err)
		}
	}
}

// remountAllReadOnly asks the kernel to remount every block-device
// filesystem read-only (sysrq "u"), which reaches the scratch disk too:
// after the switch to the overlay root it is no longer visible to unmount,
// and a clean remount saves the next boot a journal replay. The kernel does this on a work queue and says so in its log,
// so this waits (up to a second) for that line.
func remountAllReadOnly() error {
	kmsg, err := os.OpenFile("/dev/kmsg", os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer kmsg.Close()
	if _, err := kmsg.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	if err := os.WriteFile("/proc/sysrq-trigger", []byte("u"), 0); err != nil {
		return err
	}
	kmsg.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 8192) // one record per read
	for {
		n, err := kmsg.Read(buf)
		if errors.Is(err, unix.EPIPE) { // records overwritten under us
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for the emergency remount: %w", err)
		}
		if bytes.Contains(buf[:n], []byte("Emergency Remount complete")) {
			return nil
		}
	}
}
