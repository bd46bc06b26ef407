package kernel

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Module is one loadable kernel module, ready for the initramfs.
type Module struct {
	// Name is the module's name with '-' normalised to '_' (virtio_blk).
	Name string
	// Path is relative to lib/modules/<kver> and never carries a
	// compression suffix, e.g. "kernel/drivers/char/virtio_console.ko".
	Path string
	// Depends names the modules that must be loaded before this one: its
	// modinfo depends= list and those of its pre soft dependencies that
	// are modules.
	Depends []string
	// Aliases are the module's modinfo alias= patterns (shell globs such
	// as "virtio:d00000002v*" or "fs-ext4"): the devices it drives and
	// the other names it answers to.
	Aliases []string
	// Data is the module's ELF object, decompressed.
	Data []byte
}

// DefaultModules names what sandbar-init needs: the virtio transports and
// devices (console, block, net, and the entropy and balloon devices that
// Virtualization.framework attaches), virtio-fs and 9p for the workspace
// share, vsock, overlayfs and ext4. sandbar-init loads only the drivers of
// devices the machine has, so a module listed here costs a boot nothing
// where its device is absent. Their own dependencies (virtio_ring, fuse,
// netfs, jbd2, mbcache, crc16, crc32c...) come in through ResolveModules.
//
// In Debian bookworm's 6.1 kernels (checked on 6.1.0-56, amd64 and arm64)
// every one of these is a loadable module, none is built in, and modules
// ship uncompressed (.ko); virtio and virtio_ring are built in on arm64 and
// modules on amd64. Names built in elsewhere are skipped by
// ResolveModules.
func DefaultModules() []string {
	return []string{
		"virtio_mmio",
		"virtio_pci",
		"virtio_console",
		"virtio_blk",
		"virtio_net",
		"virtio_rng",
		"virtio_balloon",
		"vmw_vsock_virtio_transport",
		"overlay",
		"ext4",
		"virtiofs",
		"9p",
		"9pnet_virtio",
	}
}

// moduleFile is a module found in the tree, before its modinfo is read.
type moduleFile struct {
	file string // path in the tree, with any compression suffix
	path string // path without the compression suffix
}

// moduleSuffixes are the module file names depmod knows.
func moduleSuffixes() []string { return []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} }

// ResolveModules finds the modules named in want, and everything they
// depend on, in tree, which is rooted at lib/modules/<kver> of an unpacked
// linux-image package. Debian ships no modules.dep (depmod runs at install
// time), so dependencies come from each module's .modinfo section. Modules
// listed in modules.builtin are skipped. The result is in load order,
// dependencies first, and is the same for the same input.
//
// Pre soft dependencies ("softdep=pre: crypto-crc32c") name aliases rather
// than modules; they are resolved by trying the name without a "crypto-"
// prefix and then with a "_generic" suffix (crc32c → crc32c_generic), and
// skipped when neither exists, as modprobe does with a missing softdep.
func ResolveModules(tree fs.FS, want []string) ([]Module, error) {
	builtin, err := readBuiltin(tree)
	if err != nil {
		return nil, err
	}
	index, err := indexModules(tree)
	if err != nil {
		return nil, err
	}
	r := resolver{tree: tree, builtin: builtin, index: index, state: map[string]int{}}
	for _, w := range want {
		if err := r.visit(normalise(w), nil); err != nil {
			return nil, err
		}
	}
	return r.out, nil
}

func normalise(name string) string { return strings.ReplaceAll(name, "-", "_") }

func readBuiltin(tree fs.FS) (map[string]bool, error) {
	builtin := map[string]bool{}
	b, err := fs.ReadFile(tree, "modules.builtin")
	if errors.Is(err, fs.ErrNotExist) {
		return builtin, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read modules.builtin: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		builtin[normalise(strings.TrimSuffix(path.Base(line), ".ko"))] = true
	}
	return builtin, sc.Err()
}

func indexModules(tree fs.FS) (map[string]moduleFile, error) {
	index := map[string]moduleFile{}
	err := fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		for _, suf := range moduleSuffixes() {
			if !strings.HasSuffix(p, suf) {
				continue
			}
			name := normalise(strings.TrimSuffix(path.Base(p), suf))
			if _, dup := index[name]; !dup { // WalkDir is lexical: first wins
				index[name] = moduleFile{file: p, path: strings.TrimSuffix(p, suf) + ".ko"}
			}
			break
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index kernel modules: %w", err)
	}
	return index, nil
}

const (
	visiting = 1
	done     = 2
)

type resolver struct {
	tree    fs.FS
	builtin map[string]bool
	index   map[string]moduleFile
	state   map[string]int
	out     []Module
}

// visit appends name and its dependencies to r.out, dependencies first.
// chain is the path of dependents that led here, for error messages.
func (r *resolver) visit(name string, chain []string) error {
	switch r.state[name] {
	case done:
		return nil
	case visiting:
		return fmt.Errorf("kernel modules depend on each other in a cycle: %s → %s", strings.Join(chain, " → "), name)
	}
	if r.builtin[name] {
		r.state[name] = done
		return nil
	}
	mf, ok := r.index[name]
	if !ok {
		if len(chain) == 0 {
			return fmt.Errorf("kernel module %q is neither built in nor shipped in this kernel: remove it from the list or use a kernel that has it", name)
		}
		return fmt.Errorf("kernel module %q, needed by %s, is missing from the kernel package: the package is incomplete", name, chain[len(chain)-1])
	}
	r.state[name] = visiting
	data, err := readModule(r.tree, mf.file)
	if err != nil {
		return err
	}
	info, err := modinfo(data)
	if err != nil {
		return fmt.Errorf("kernel module %s: %w", mf.file, err)
	}
	chain = append(chain, name)
	var deps []string
	for _, d := range info.depends {
		if err := r.visit(d, chain); err != nil {
			return err
		}
		if !r.builtin[d] {
			deps = append(deps, d)
		}
	}
	for _, s := range info.softPre {
		d, ok := r.softTarget(s)
		if !ok || d == name {
			continue
		}
		if err := r.visit(d, chain); err != nil {
			return err
		}
		deps = append(deps, d)
	}
	r.state[name] = done
	r.out = append(r.out, Module{Name: name, Path: mf.path, Depends: deps, Aliases: info.aliases, Data: data})
	return nil
}

// softTarget maps a soft dependency, usually an alias, onto a module name.
func (r *resolver) softTarget(s string) (string, bool) {
	base := normalise(strings.TrimPrefix(s, "crypto-"))
	for _, c := range []string{normalise(s), base, base + "_generic"} {
		if r.builtin[c] {
			return "", false
		}
		if _, ok := r.index[c]; ok {
			return c, true
		}
	}
	return "", false
}

// readModule reads a module file, decompressing .xz, .zst and .gz.
func readModule(tree fs.FS, name string) ([]byte, error) {
	f, err := tree.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open kernel module: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	switch {
	case strings.HasSuffix(name, ".xz"):
		xr, err := xz.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("kernel module %s: %w", name, err)
		}
		r = xr
	case strings.HasSuffix(name, ".zst"):
		zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("kernel module %s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	case strings.HasSuffix(name, ".gz"):
		gr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("kernel module %s: %w", name, err)
		}
		r = gr
	}
	data, err := readBounded(r)
	if err != nil {
		return nil, fmt.Errorf("kernel module %s: %w", name, err)
	}
	return data, nil
}

type modInfo struct {
	name    string
	depends []string
	softPre []string
	aliases []string
}

// modinfo parses the NUL-separated key=value strings of a module's
// .modinfo section.
func modinfo(data []byte) (modInfo, error) {
	var mi modInfo
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return mi, fmt.Errorf("not an ELF object: %w", err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return mi, errors.New("no .modinfo section: not a kernel module")
	}
	raw, err := sec.Data()
	if err != nil {
		return mi, fmt.Errorf("read .modinfo: %w", err)
	}
	for _, kv := range bytes.Split(raw, []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok {
			continue
		}
		switch k {
		case "name":
			mi.name = normalise(v)
		case "depends":
			for _, d := range strings.Split(v, ",") {
				if d = strings.TrimSpace(d); d != "" {
					mi.depends = append(mi.depends, normalise(d))
				}
			}
		case "softdep":
			mi.softPre = append(mi.softPre, parseSoftPre(v)...)
		case "alias":
			mi.aliases = append(mi.aliases, v)
		}
	}
	return mi, nil
}

// parseSoftPre returns the names after "pre:" in a softdep value such as
// "pre: crc32c crc16 post: foo".
func parseSoftPre(v string) []string {
	var out []string
	pre := false
	for _, tok := range strings.Fields(v) {
		switch tok {
		case "pre:":
			pre = true
		case "post:":
			pre = false
		default:
			if pre {
				out = append(out, tok)
			}
		}
	}
	return out
}
