package main

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"sync"
)

// diag is one problem found in one package for one architecture.
type diag struct {
	pkg   string // import path
	fatal bool   // the problem fails the run (see listedPackage.isMain)
	root  string // main module root, for relative paths; empty for others
	file  string // absolute file name; empty when the problem has no position
	line  int
	col   int
	msg   string
}

// archResult is what checking one architecture found.
type archResult struct {
	arch    string
	checked []string // import paths type-checked (main module and deps)
	main    []string // those of them that belong to the main module
	skipped []string // main-module packages with no Go files for darwin
	diags   []diag
	// types holds every package checked, by import path, for inspection.
	types map[string]*types.Package
}

// parsedFile is a file parsed once and shared by every architecture's
// check: go/types only reads the syntax tree.
type parsedFile struct {
	once sync.Once
	file *ast.File
	err  error
}

// fileCache parses each file at most once per run.
type fileCache struct {
	fset  *token.FileSet
	mu    sync.Mutex
	files map[string]*parsedFile
}

func newFileCache() *fileCache {
	return &fileCache{fset: token.NewFileSet(), files: make(map[string]*parsedFile)}
}

func (c *fileCache) parse(name string) (*ast.File, error) {
	c.mu.Lock()
	pf, ok := c.files[name]
	if !ok {
		pf = new(parsedFile)
		c.files[name] = pf
	}
	c.mu.Unlock()
	pf.once.Do(func() {
		pf.file, pf.err = parser.ParseFile(c.fset, name, nil, parser.SkipObjectResolution|parser.ParseComments)
	})
	return pf.file, pf.err
}

// pkgState is one package's place in one architecture's check.
type pkgState struct {
	lp    *listedPackage
	done  chan struct{} // closed once types (or unavailable) is final
	types *types.Package
	// unavailable says why importers cannot use the package.
	unavailable string
	diags       []diag
	// cacheable: a dependency whose imports are all cacheable, so its
	// package object may be shared with later runs.
	cacheable bool
}

// checker type-checks one architecture's package graph.
type checker struct {
	arch  string
	files *fileCache
	sizes types.Sizes
	sem   chan struct{} // bounds concurrent package checks
	cache *depCache
	pkgs  map[string]*pkgState
}

// checkArch type-checks pkgs (in go list -deps order) for darwin/arch. sem
// bounds how many packages are checked at once, across architectures.
func checkArch(ctx context.Context, arch string, pkgs []*listedPackage, files *fileCache, cache *depCache, sem chan struct{}) (*archResult, error) {
	sizes := types.SizesFor("gc", arch)
	if sizes == nil {
		return nil, fmt.Errorf("unknown architecture %q: use arm64 or amd64", arch)
	}
	c := &checker{arch: arch, files: files, sizes: sizes, sem: sem, cache: cache, pkgs: make(map[string]*pkgState, len(pkgs))}
	order := make([]*pkgState, 0, len(pkgs))
	waits := make([][]*pkgState, 0, len(pkgs))
	for _, lp := range pkgs {
		if _, dup := c.pkgs[lp.ImportPath]; dup {
			continue
		}
		// A package waits only for imports listed before it, so an import
		// cycle (reported by go list under -e) cannot deadlock the check.
		var deps []*pkgState
		cacheable := !lp.isMain() && lp.Error == nil
		for _, imp := range lp.Imports {
			d, ok := c.pkgs[imp]
			switch {
			case ok:
				deps = append(deps, d)
				cacheable = cacheable && d.cacheable
			case imp != "C":
				cacheable = false
			}
		}
		st := &pkgState{lp: lp, done: make(chan struct{}), cacheable: cacheable}
		c.pkgs[lp.ImportPath] = st
		order = append(order, st)
		waits = append(waits, deps)
	}
	// The map is complete before any goroutine reads it.
	for i, st := range order {
		go c.run(ctx, st, waits[i])
	}
	res := &archResult{arch: arch, types: make(map[string]*types.Package, len(order))}
	for _, st := range order {
		// Every goroutine gives up promptly once ctx is done, so waiting
		// for all of them leaves none behind.
		<-st.done
		lp := st.lp
		if st.types != nil && lp.ImportPath != "unsafe" {
			res.checked = append(res.checked, lp.ImportPath)
			res.types[lp.ImportPath] = st.types
			if lp.isMain() {
				res.main = append(res.main, lp.ImportPath)
			}
		}
		if lp.isMain() && st.unavailable != "" && lp.noGoFiles() {
			res.skipped = append(res.skipped, lp.ImportPath)
		}
		res.diags = append(res.diags, st.diags...)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("check darwin/%s: %w", arch, err)
	}
	return res, nil
}

// run waits for deps, then checks st.
func (c *checker) run(ctx context.Context, st *pkgState, deps []*pkgState) {
	defer close(st.done)
	for _, d := range deps {
		select {
		case <-d.done:
		case <-ctx.Done():
			st.unavailable = ctx.Err().Error()
			return
		}
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		st.unavailable = ctx.Err().Error()
		return
	}
	defer func() { <-c.sem }()
	if !st.cacheable || c.cache == nil {
		c.check(st)
		return
	}
	lp := st.lp
	k := depKey{arch: c.arch, importPath: lp.ImportPath, dir: lp.Dir,
		files: strings.Join(lp.GoFiles, " ") + "|" + strings.Join(lp.CgoFiles, " ")}
	d, ok := c.cache.load(k)
	if !ok {
		c.check(st)
		d = c.cache.loadOrStore(k, &cachedDep{types: st.types, unavailable: st.unavailable, diags: st.diags})
	}
	st.types, st.unavailable, st.diags = d.types, d.unavailable, d.diags
}

func (c *checker) check(st *pkgState) {
	lp := st.lp
	if lp.ImportPath == "unsafe" {
		st.types = types.Unsafe
		return
	}
	if lp.noGoFiles() {
		st.unavailable = "no Go files for darwin/" + c.arch
		return
	}
	add := func(file string, line, col int, msg string) {
		d := diag{pkg: lp.ImportPath, fatal: lp.isMain(), file: file, line: line, col: col, msg: msg}
		if lp.isMain() {
			d.root = lp.Module.Dir
		}
		st.diags = append(st.diags, d)
	}
	if lp.Error != nil {
		file, line, col := splitPos(lp.Error.Pos)
		add(file, line, col, lp.Error.Err)
		st.diags[len(st.diags)-1].fatal = lp.fatalListError()
	}

	var syntax []*ast.File
	for _, names := range [][]string{lp.GoFiles, lp.CgoFiles} {
		for _, name := range names {
			f, err := c.files.parse(filepath.Join(lp.Dir, name))
			var list scanner.ErrorList
			switch {
			case errors.As(err, &list):
				for _, e := range list {
					add(e.Pos.Filename, e.Pos.Line, e.Pos.Column, e.Msg)
				}
			case err != nil:
				add(filepath.Join(lp.Dir, name), 0, 0, err.Error())
			}
			if f != nil {
				syntax = append(syntax, f)
			}
		}
	}
	if len(syntax) == 0 {
		st.unavailable = "no Go files could be parsed"
		return
	}

	conf := types.Config{
		GoVersion:   lp.goVersion(),
		FakeImportC: true,
		Importer:    importerFunc(func(path string) (*types.Package, error) { return c.importFor(lp, path) }),
		Sizes:       c.sizes,
		Error: func(err error) {
			var te types.Error
			if !errors.As(err, &te) {
				add("", 0, 0, err.Error())
				return
			}
			p := te.Fset.Position(te.Pos)
			add(p.Filename, p.Line, p.Column, te.Msg)
		},
	}
	// With an Error handler the checker goes on past errors, so the package
	// object is complete and importers see its whole API even when faked
	// cgo upset part of it.
	pkg, _ := conf.Check(lp.ImportPath, c.files.fset, syntax, nil)
	st.types = pkg
}

// importFor resolves path as imported by lp, through lp's ImportMap
// (vendoring) to a package already checked for this architecture.
func (c *checker) importFor(lp *listedPackage, path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if mapped, ok := lp.ImportMap[path]; ok {
		path = mapped
	}
	st, ok := c.pkgs[path]
	if !ok {
		return nil, fmt.Errorf("package %s was not listed by go list for darwin/%s", path, c.arch)
	}
	// The dependency is normally done: run waited for it. It is not only
	// across an import cycle, which go list has already reported.
	select {
	case <-st.done:
	default:
		return nil, fmt.Errorf("package %s is part of an import cycle", path)
	}
	if st.types == nil {
		if st.lp.Error != nil {
			return nil, fmt.Errorf("package %s: %s", path, st.lp.Error.Err)
		}
		return nil, fmt.Errorf("package %s: %s", path, st.unavailable)
	}
	return st.types, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
