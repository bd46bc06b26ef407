package initramfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"sandbar/guest/image/kernel"
)

// ModulesList is where Build records the modules in the initramfs, one a
// line in load order, each as modules.dep writes it: its path relative to
// /, a colon, and the paths of the modules it needs loaded first
// ("lib/modules/6.1.0-28-amd64/kernel/fs/ext4/ext4.ko: lib/.../jbd2.ko ...").
// sandbar-init reads it.
const ModulesList = "etc/sandbar/modules"

// ModulesAlias is where Build records the modules' aliases, one a line as
// modules.alias writes them ("alias virtio:d00000002v* virtio_blk"), so
// sandbar-init loads the drivers of the devices the machine has and no
// others.
const ModulesAlias = "etc/sandbar/modules.alias"

// Build writes the guest initramfs to w: the base directories, /init (the
// static sandbar-init), /dev/console and /dev/null, each module at
// lib/modules/<kver>/<Path>, ModulesList naming them and their
// dependencies in the order given, which must be load order
// (kernel.ResolveModules returns it so), and ModulesAlias.
//
// It writes no compression. Measured booting Debian's 6.1.0-56 kernel under
// QEMU TCG (microvm, 1 vCPU): the kernel unpacked this 7.9 MB archive in
// 0.21 s (mean of 4) against 0.34 s for the 2.5 MB gzip of it; the unpack
// runs alongside other kernel set-up, so time to /init differed by less
// than the run-to-run noise, and the host reads either from page cache.
func Build(w io.Writer, init []byte, kver string, modules []kernel.Module) error {
	if len(init) == 0 {
		return errors.New("build initramfs: no init binary: build sandbar-init first")
	}
	if kver == "" || path.Base(kver) != kver {
		return fmt.Errorf("build initramfs: bad kernel version %q", kver)
	}
	cw := NewWriter(w)
	modDir := "lib/modules/" + kver
	for _, d := range []string{"dev", "proc", "sys", "tmp", "run", "newroot", "etc", "etc/sandbar", "lib", "lib/modules", modDir} {
		perm := fs.FileMode(0o755)
		if d == "tmp" {
			perm = 0o777 | fs.ModeSticky
		}
		if err := cw.AddDir(d, perm); err != nil {
			return err
		}
	}
	if err := cw.AddDevice("dev/console", fs.ModeDevice|fs.ModeCharDevice|0o600, 5, 1); err != nil {
		return err
	}
	if err := cw.AddDevice("dev/null", fs.ModeDevice|fs.ModeCharDevice|0o666, 1, 3); err != nil {
		return err
	}
	if err := cw.AddFile("init", 0o755, init); err != nil {
		return err
	}
	var list, aliases bytes.Buffer
	paths := map[string]string{} // module name → path in the archive
	for _, m := range modules {
		if m.Path == "" || len(m.Data) == 0 {
			return fmt.Errorf("build initramfs: module %q has no path or data", m.Name)
		}
		p := path.Join(modDir, path.Clean("/" + m.Path)[1:])
		if err := cw.AddFile(p, 0o644, m.Data); err != nil {
			return err
		}
		list.WriteString(p + ":")
		for _, d := range m.Depends {
			dp, ok := paths[d]
			if !ok {
				return fmt.Errorf("build initramfs: module %s needs %s, which is not before it in the list", m.Name, d)
			}
			list.WriteString(" " + dp)
		}
		list.WriteString("\n")
		for _, a := range m.Aliases {
			if strings.ContainsAny(a, " \t\n") {
				continue // not a pattern modules.alias could hold
			}
			fmt.Fprintf(&aliases, "alias %s %s\n", a, m.Name)
		}
		paths[m.Name] = p
	}
	if err := cw.AddFile(ModulesList, 0o644, list.Bytes()); err != nil {
		return err
	}
	if err := cw.AddFile(ModulesAlias, 0o644, aliases.Bytes()); err != nil {
		return err
	}
	if err := cw.Close(); err != nil {
		return fmt.Errorf("build initramfs: %w", err)
	}
	return nil
}
