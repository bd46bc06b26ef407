//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Written by guest/image/initramfs.Build.
const (
	modulesList  = "/etc/sandbar/modules"
	modulesAlias = "/etc/sandbar/modules.alias"
)

// modIndex is what the initramfs says of its modules.
type modIndex struct {
	order   []string            // names, in load order
	path    map[string]string   // name → file
	deps    map[string][]string // name → names to load first
	aliases []modAlias          // empty: an initramfs without an alias list
}

// modAlias is one line of modules.alias: a shell pattern, such as
// "virtio:d00000002v*" or "fs-ext4", and the module it names.
type modAlias struct{ pattern, module string }

// readModuleList reads a modules list: one module a line, in load order,
// as "path: dependency-path ..." (modules.dep's shape; a line may be just
// the path), skipping blank lines and # comments. Paths are made absolute.
func readModuleList(r io.Reader) (*modIndex, error) {
	idx := &modIndex{path: map[string]string{}, deps: map[string][]string{}}
	abs := func(p string) string {
		if !strings.HasPrefix(p, "/") {
			return "/" + p
		}
		return p
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, rest, _ := strings.Cut(line, ":")
		file = abs(strings.TrimSpace(file))
		name := moduleName(file)
		var deps []string
		for _, d := range strings.Fields(rest) {
			dep := moduleName(d)
			if _, ok := idx.path[dep]; !ok || dep == name {
				return nil, fmt.Errorf("module %s needs %s, which is not listed before it", name, dep)
			}
			deps = append(deps, dep)
		}
		if _, dup := idx.path[name]; !dup {
			idx.order = append(idx.order, name)
		}
		idx.path[name] = file
		idx.deps[name] = deps
	}
	return idx, sc.Err()
}

// readAliases reads modules.alias lines ("alias <pattern> <module>").
func readAliases(r io.Reader) ([]modAlias, error) {
	var out []modAlias
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "alias" {
			out = append(out, modAlias{pattern: f[1], module: strings.ReplaceAll(f[2], "-", "_")})
		}
	}
	return out, sc.Err()
}

// readModIndex reads the initramfs's module list and aliases; a missing
// list is an empty index (an initramfs without modules).
func readModIndex(listFile, aliasFile string) (*modIndex, error) {
	f, err := os.Open(listFile)
	if errors.Is(err, os.ErrNotExist) {
		return &modIndex{path: map[string]string{}, deps: map[string][]string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	idx, err := readModuleList(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", listFile, err)
	}
	a, err := os.Open(aliasFile)
	if errors.Is(err, os.ErrNotExist) {
		return idx, nil
	}
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if idx.aliases, err = readAliases(a); err != nil {
		return nil, fmt.Errorf("read %s: %w", aliasFile, err)
	}
	return idx, nil
}

// match returns the modules, in load order, that have an alias matching
// any of names (device modaliases such as "virtio:d00000002v00001AF4",
// or "fs-ext4"), as modprobe matches them.
func (idx *modIndex) match(names []string) []string {
	want := map[string]bool{}
	for _, n := range names {
		for _, a := range idx.aliases {
			if ok, err := path.Match(a.pattern, n); ok && err == nil {
				want[a.module] = true
			}
		}
	}
	var out []string
	for _, m := range idx.order {
		if want[m] {
			out = append(out, m)
		}
	}
	return out
}

// closure returns names and everything they depend on, in load order.
func (idx *modIndex) closure(names []string) []string {
	want := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		if want[n] {
			return
		}
		want[n] = true
		for _, d := range idx.deps[n] {
			visit(d)
		}
	}
	for _, n := range names {
		visit(n)
	}
	var out []string
	for _, m := range idx.order {
		if want[m] {
			out = append(out, m)
			delete(want, m)
		}
	}
	for _, n := range names { // not in the index: loadNow says so
		if want[n] {
			out = append(out, n)
			delete(want, n)
		}
	}
	return out
}

// modLoader loads modules from an index, each once and after everything
// it depends on, up to workers at a time.
type modLoader struct {
	idx    *modIndex
	params map[string][]string // by module name, from the kernel command line
	// loadFile loads one module file (loadModule, or a fake in tests).
	loadFile func(file, params string) error
	// report, if not nil, hears of each module loaded and how long it
	// took; with several workers, from several goroutines.
	report func(name string, d time.Duration)
	// loaded, if not nil, says a module is loaded already (a second
	// pass, after a template's go-ahead).
	loaded func(name string) bool
	// skip names drivers not to load now (templateDrivers).
	skip map[string]bool
	// workers is how many modules may load at once; below 2, modules
	// load one at a time, in the index's order.
	workers int

	once  sync.Once
	mu    sync.Mutex
	loads map[string]*modLoad
	slots chan struct{} // a token per module loading now
	wg    sync.WaitGroup
	n     int // modules loaded
}

// modLoad is one module's load: done is closed when it has ended, and err
// then says how.
type modLoad struct {
	done chan struct{}
	err  error
}

// start begins loading name as soon as everything it depends on is
// loaded, and returns its load; asked again, it returns the same load.
// It ends when its dependencies have, so it never waits on a cycle:
// readModuleList accepts only dependencies listed earlier.
func (l *modLoader) start(name string) *modLoad {
	l.once.Do(func() {
		l.loads = map[string]*modLoad{}
		l.slots = make(chan struct{}, max(1, l.workers))
	})
	l.mu.Lock()
	if m, ok := l.loads[name]; ok {
		l.mu.Unlock()
		return m
	}
	m := &modLoad{done: make(chan struct{})}
	l.loads[name] = m
	l.mu.Unlock()
	var deps []*modLoad
	for _, d := range l.idx.deps[name] {
		deps = append(deps, l.start(d))
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(m.done)
		for _, d := range deps {
			<-d.done
			if d.err != nil {
				m.err = d.err
				return
			}
		}
		l.slots <- struct{}{}
		defer func() { <-l.slots }()
		m.err = l.loadNow(name)
	}()
	return m
}

// loadNow loads one module. A module already loaded (by the kernel, say)
// is fine.
func (l *modLoader) loadNow(name string) error {
	if l.loaded != nil && l.loaded(name) {
		return nil
	}
	file, ok := l.idx.path[name]
	if !ok {
		return fmt.Errorf("load module %s: not in the initramfs", name)
	}
	start := time.Now()
	if err := l.loadFile(file, strings.Join(l.params[name], " ")); err != nil {
		return err
	}
	l.mu.Lock()
	l.n++
	l.mu.Unlock()
	if l.report != nil {
		l.report(name, time.Since(start))
	}
	return nil
}

// loadAll loads names and everything they depend on, and returns when
// all are loaded or one failed: with one worker one at a time in the
// index's order, else each as soon as its dependencies are loaded.
func (l *modLoader) loadAll(names []string) error {
	if l.workers > 1 {
		var loads []*modLoad
		for _, name := range names {
			loads = append(loads, l.start(name))
		}
		for _, m := range loads {
			<-m.done
			if m.err != nil {
				return m.err
			}
		}
		return nil
	}
	for _, name := range l.idx.closure(names) {
		m := l.start(name)
		<-m.done
		if m.err != nil {
			return m.err
		}
	}
	return nil
}

// wait waits for every load started and returns how many modules loaded.
func (l *modLoader) wait() int {
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// deviceAliases returns the modalias of every device under the given bus
// directories (/sys/bus/<bus>/devices).
func deviceAliases(dirs ...string) []string {
	var out []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // a bus this kernel or machine lacks
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name(), "modalias"))
			if err != nil {
				continue
			}
			if a := strings.TrimSpace(string(b)); a != "" {
				out = append(out, a)
			}
		}
	}
	return out
}

// loadModules loads what this machine and command line need from the
// initramfs: the virtio transports for the devices on the platform and
// PCI buses, then the drivers of the devices those put on the virtio bus,
// and the file systems cfg mounts, which with several workers load
// alongside from the start. Drivers of devices the machine lacks (no NIC
// when the network is off, no vsock when the host channel is a
// virtio-serial port, 9p or virtio-fs but not both) are not loaded: under
// emulation each module costs tens of milliseconds. An initramfs without
// an alias list gets every module loaded. It returns how many modules
// it loaded.
func loadModules(l *modLoader, sysRoot string, cfg config) (int, error) {
	err := loadNeeded(l, sysRoot, cfg)
	return l.wait(), err
}

func loadNeeded(l *modLoader, sysRoot string, cfg config) error {
	idx := l.idx
	if len(idx.aliases) == 0 {
		return l.loadAll(idx.order)
	}
	bus := func(name string) string { return filepath.Join(sysRoot, "bus", name, "devices") }
	filesystems := idx.match(cfg.filesystems())
	if l.workers > 1 {
		for _, m := range filesystems {
			l.start(m)
		}
	}
	// Loading a transport probes it, which puts its devices on the
	// virtio bus before finit_module returns.
	if err := l.loadAll(idx.match(deviceAliases(bus("platform"), bus("pci")))); err != nil {
		return err
	}
	drivers := idx.match(deviceAliases(bus("virtio")))
	drivers = slices.DeleteFunc(drivers, func(n string) bool { return l.skip[n] })
	return l.loadAll(append(drivers, filesystems...))
}

// moduleName is the kernel's name for a module file.
func moduleName(p string) string {
	return strings.ReplaceAll(strings.TrimSuffix(path.Base(p), ".ko"), "-", "_")
}

// moduleLoaded says whether a loadable module is in the kernel.
func moduleLoaded(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/module", name, "initstate"))
	return err == nil
}

func loadModule(p, params string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("load module: %w", err)
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), params, 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("load module %s: %w", p, err)
	}
	return nil
}
