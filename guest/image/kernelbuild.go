package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sandbar/guest/image/debian"
	"sandbar/guest/image/initramfs"
	"sandbar/guest/image/kernel"
)

// kernelPackage returns the versioned kernel package the metapackage
// linux-image-<arch> depends on (linux-image-6.1.0-28-amd64) and its
// release (6.1.0-28-amd64).
func kernelPackage(ix *debian.Index, arch string) (debian.Package, string, error) {
	meta := "linux-image-" + arch
	mp, ok := ix.Lookup(meta)
	if !ok {
		return debian.Package{}, "", fmt.Errorf("the Debian archive has no %s: check the architecture (amd64 or arm64)", meta)
	}
	for _, dep := range strings.Split(mp.Depends, ",") {
		for _, alt := range strings.Split(dep, "|") {
			name := strings.TrimSpace(alt)
			if i := strings.IndexAny(name, " (:"); i >= 0 {
				name = name[:i]
			}
			if !strings.HasPrefix(name, "linux-image-") || name == meta {
				continue
			}
			p, ok := ix.Lookup(name)
			if !ok {
				continue
			}
			return p, strings.TrimPrefix(name, "linux-image-"), nil
		}
	}
	return debian.Package{}, "", fmt.Errorf("%s %s depends on no kernel package in the archive (Depends: %s)", meta, mp.Version, mp.Depends)
}

// skippedModuleTrees hold hardware drivers no virtual machine has, about
// half of the module tree's 400 MB; not writing them saves seconds of disk
// I/O on every build. No virtio module depends on them.
func skippedModuleTrees() []string {
	return []string{
		"kernel/drivers/gpu/", "kernel/drivers/media/", "kernel/drivers/net/ethernet/",
		"kernel/drivers/net/wireless/", "kernel/drivers/infiniband/", "kernel/drivers/iio/",
		"kernel/drivers/staging/", "kernel/sound/",
	}
}

// keepModuleFile says which files under lib/modules/<kver>/ module
// resolution needs: the modules and the list of built-in ones.
func keepModuleFile(rel string) bool {
	for _, skip := range skippedModuleTrees() {
		if strings.HasPrefix(rel, skip) {
			return false
		}
	}
	base := filepath.Base(rel)
	return strings.HasPrefix(base, "modules.builtin") || base == "modules.order" ||
		strings.HasSuffix(base, ".ko") || strings.Contains(base, ".ko.")
}

// unpackKernel reads the kernel package: it returns boot/vmlinuz-<kver>
// and writes the module tree's files into modDir.
func unpackKernel(debPath, kver, modDir string) ([]byte, error) {
	var vmlinuz []byte
	prefixes := []string{"lib/modules/" + kver + "/", "usr/lib/modules/" + kver + "/"}
	err := debian.Unpack(debPath, func(hdr *tar.Header, r io.Reader) error {
		name := cleanName(hdr.Name)
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		if name == "boot/vmlinuz-"+kver {
			b, err := io.ReadAll(r)
			vmlinuz = b
			return err
		}
		for _, p := range prefixes {
			rel, ok := strings.CutPrefix(name, p)
			if !ok || !keepModuleFile(rel) {
				continue
			}
			dst := filepath.Join(modDir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.Create(dst)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, r)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("unpack kernel package: %w", err)
	}
	if vmlinuz == nil {
		return nil, fmt.Errorf("kernel package has no /boot/vmlinuz-%s", kver)
	}
	return vmlinuz, nil
}

// buildBoot makes the kernel and initramfs files from the kernel package
// and returns the names of the modules in the initramfs, in load order.
func buildBoot(debPath, arch, kver, work string, init []byte, modules []string, kernelOut, initrdOut string) ([]string, error) {
	modDir := filepath.Join(work, "modules")
	defer os.RemoveAll(modDir)
	vmlinuz, err := unpackKernel(debPath, kver, modDir)
	if err != nil {
		return nil, err
	}
	boot, err := kernel.Bootable(arch, vmlinuz)
	if err != nil {
		return nil, fmt.Errorf("prepare kernel %s: %w", kver, err)
	}
	if err := os.WriteFile(kernelOut, boot, 0o644); err != nil {
		return nil, fmt.Errorf("write kernel: %w", err)
	}
	mods, err := kernel.ResolveModules(os.DirFS(modDir), modules)
	if err != nil {
		return nil, fmt.Errorf("resolve kernel modules: %w", err)
	}
	for i := range mods {
		if mods[i].Data, err = kernel.SlimForBoot(mods[i].Data); err != nil {
			return nil, fmt.Errorf("kernel module %s: %w", mods[i].Name, err)
		}
	}
	var buf bytes.Buffer
	if err := initramfs.Build(&buf, init, kver, mods); err != nil {
		return nil, err
	}
	if err := os.WriteFile(initrdOut, buf.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("write initramfs: %w", err)
	}
	names := make([]string, len(mods))
	for i, m := range mods {
		names[i] = m.Name
	}
	return names, nil
}
