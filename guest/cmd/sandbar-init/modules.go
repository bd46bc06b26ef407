//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// modulesList is written by guest/image/initramfs.Build.
const modulesList = "/etc/sandbar/modules"

// readModuleList returns the module paths listed one a line, in order,
// skipping blank lines and # comments.
func readModuleList(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "/") {
			line = "/" + line
		}
		out = append(out, line)
	}
	return out, sc.Err()
}

// moduleName is the kernel's name for a module file.
func moduleName(p string) string {
	return strings.ReplaceAll(strings.TrimSuffix(path.Base(p), ".ko"), "-", "_")
}

// loadModules loads the modules in the list file in order. A module that is
// already loaded is fine. It returns how many it loaded. loaded, if not
// nil, hears of each module and how long it took.
func loadModules(listFile string, params map[string][]string, loaded func(p string, d time.Duration)) (int, error) {
	f, err := os.Open(listFile)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	list, err := readModuleList(f)
	f.Close()
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", listFile, err)
	}
	n := 0
	for _, p := range list {
		start := time.Now()
		if err := loadModule(p, strings.Join(params[moduleName(p)], " ")); err != nil {
			return n, err
		}
		if loaded != nil {
			loaded(p, time.Since(start))
		}
		n++
	}
	return n, nil
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
