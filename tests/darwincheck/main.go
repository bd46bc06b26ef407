package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Exit statuses.
const (
	exitOK    = 0
	exitTypes = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], "", os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command: args without the program name, dir the
// directory to run go list in (empty: the current one). It returns the
// exit status.
func run(ctx context.Context, args []string, dir string, stdout, stderr io.Writer) int {
	return runCached(ctx, newDepCache(), args, dir, stdout, stderr)
}

// runCached is run reusing dependencies already checked into cache.
func runCached(ctx context.Context, cache *depCache, args []string, dir string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("darwincheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	archFlag := fs.String("arch", "arm64,amd64", "comma-separated darwin architectures to check")
	verbose := fs.Bool("v", false, "also print errors found in dependencies, skipped packages and timings")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: darwincheck [-arch arm64,amd64] [-v] [packages]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	arches, err := parseArches(*archFlag)
	if err != nil {
		fmt.Fprintf(stderr, "darwincheck: %v\n", err)
		return exitUsage
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}

	start := time.Now()
	listed := make([][]*listedPackage, len(arches))
	for i, arch := range arches {
		pkgs, err := goList(ctx, dir, arch, patterns)
		if err != nil {
			fmt.Fprintf(stderr, "darwincheck: %v\n", err)
			return exitUsage
		}
		listed[i] = pkgs
	}
	if bad := unresolved(listed[0]); len(bad) > 0 {
		for _, l := range bad {
			fmt.Fprintf(stderr, "darwincheck: %s\n", l)
		}
		return exitUsage
	}

	// Both architectures run at once over one pool of workers, sharing the
	// parsed files: that keeps the cores busy while one graph waits on a
	// long chain of dependencies.
	files := newFileCache()
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	results := make([]*archResult, len(arches))
	errs := make([]error, len(arches))
	took := make([]time.Duration, len(arches))
	var wg sync.WaitGroup
	for i, arch := range arches {
		wg.Go(func() {
			archStart := time.Now()
			results[i], errs[i] = checkArch(ctx, arch, listed[i], files, cache, sem)
			took[i] = time.Since(archStart)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "darwincheck: %v\n", err)
		return exitUsage
	}
	elapsed := time.Since(start)
	if *verbose {
		for i, r := range results {
			fmt.Fprintf(stderr, "darwin/%s: %d packages in %.1fs\n", r.arch, len(r.checked), took[i].Seconds())
		}
	}

	mainLines, depLines := report(results)
	if *verbose {
		for _, r := range results {
			for _, p := range r.skipped {
				fmt.Fprintf(stderr, "darwin/%s: skipped %s: no Go files for darwin\n", r.arch, p)
			}
		}
		for _, l := range depLines {
			fmt.Fprintln(stderr, "dependency: "+l)
		}
	}
	for _, l := range mainLines {
		fmt.Fprintln(stderr, l)
	}
	if len(mainLines) > 0 {
		fmt.Fprintf(stderr, "darwincheck: %d errors for %s\n", len(mainLines), archList(arches))
		return exitTypes
	}

	all, mods := make(map[string]bool), make(map[string]bool)
	for _, r := range results {
		for _, p := range r.checked {
			all[p] = true
		}
		for _, p := range r.main {
			mods[p] = true
		}
	}
	fmt.Fprintf(stdout, "darwincheck: %d packages OK for %s (%d of the module) in %.1fs\n",
		len(all), archList(arches), len(mods), elapsed.Seconds())
	return exitOK
}

// unresolved lists the packages named on the command line that go list
// could not find at all (no such directory, no module providing it): a
// mistake in the arguments, not a type error.
func unresolved(pkgs []*listedPackage) []string {
	var bad []string
	for _, p := range pkgs {
		if !p.DepOnly && p.Error != nil && p.Dir == "" && len(p.GoFiles)+len(p.CgoFiles) == 0 {
			bad = append(bad, p.ImportPath+": "+p.Error.Err)
		}
	}
	return bad
}

func parseArches(s string) ([]string, error) {
	var arches []string
	for a := range strings.SplitSeq(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" || slices.Contains(arches, a) {
			continue
		}
		if a != "arm64" && a != "amd64" {
			return nil, fmt.Errorf("-arch %q: macOS runs on arm64 and amd64 only", a)
		}
		arches = append(arches, a)
	}
	if len(arches) == 0 {
		return nil, errors.New("-arch is empty: give arm64, amd64 or both")
	}
	return arches, nil
}

func archList(arches []string) string {
	out := make([]string, len(arches))
	for i, a := range arches {
		out[i] = "darwin/" + a
	}
	return strings.Join(out, ", ")
}

// report turns the diagnostics of all architectures into sorted,
// de-duplicated lines: those of the main module and those of dependencies.
// A problem seen for only some architectures says which.
func report(results []*archResult) (mainLines, depLines []string) {
	type key struct {
		fatal     bool
		file      string
		line, col int
		text      string
	}
	arches := make(map[key][]string)
	var keys []key
	for _, r := range results {
		for _, d := range r.diags {
			k := key{fatal: d.fatal, file: d.file, line: d.line, col: d.col, text: d.msg}
			if d.root != "" {
				k.file = relTo(d.root, d.file)
			}
			if k.file == "" {
				k.text = d.pkg + ": " + d.msg
			}
			if _, seen := arches[k]; !seen {
				keys = append(keys, k)
			}
			if !slices.Contains(arches[k], r.arch) {
				arches[k] = append(arches[k], r.arch)
			}
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(strings.Compare(a.file, b.file), cmp.Compare(a.line, b.line),
			cmp.Compare(a.col, b.col), strings.Compare(a.text, b.text))
	})
	for _, k := range keys {
		l := k.text
		switch {
		case k.file != "" && k.line > 0:
			l = fmt.Sprintf("%s:%d:%d: %s", k.file, k.line, k.col, k.text)
		case k.file != "":
			l = k.file + ": " + k.text
		}
		if as := arches[k]; len(as) < len(results) {
			l += " (" + archList(as) + " only)"
		}
		if k.fatal {
			mainLines = append(mainLines, l)
		} else {
			depLines = append(depLines, l)
		}
	}
	return mainLines, depLines
}

// relTo makes file relative to root when it lies inside it.
func relTo(root, file string) string {
	if root == "" || file == "" || !filepath.IsAbs(file) {
		return file
	}
	rel, err := filepath.Rel(root, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return file
	}
	return rel
}

// splitPos splits a go list error position, "file:line:col" or "file:line"
// (file made absolute by goList), into file name and numbers.
func splitPos(pos string) (file string, line, col int) {
	file = pos
	var nums []int
	for range 2 {
		i := strings.LastIndexByte(file, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(file[i+1:])
		if err != nil {
			break
		}
		nums = append([]int{n}, nums...)
		file = file[:i]
	}
	if len(nums) > 0 {
		line = nums[0]
	}
	if len(nums) > 1 {
		col = nums[1]
	}
	return file, line, col
}
