package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// listedPackage holds the fields of `go list -json` that the check needs.
type listedPackage struct {
	Dir            string
	ImportPath     string
	Name           string
	Standard       bool
	DepOnly        bool
	Module         *listedModule
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	Imports        []string
	ImportMap      map[string]string
	Error          *listedError
}

type listedModule struct {
	Path      string
	Main      bool
	Dir       string
	GoVersion string
}

type listedError struct {
	Pos string
	Err string
}

// listFields are requested with -json=... so go list does less work.
const listFields = "Dir,ImportPath,Name,Standard,DepOnly,Module,GoFiles,CgoFiles,IgnoredGoFiles,Imports,ImportMap,Error"

// goListError is a go list run that failed outright (not a package error
// reported under -e).
type goListError struct {
	arch   string
	err    error
	stderr string
}

func (e *goListError) Error() string {
	return fmt.Sprintf("go list for darwin/%s failed: %v\n%s", e.arch, e.err, strings.TrimSpace(e.stderr))
}

func (e *goListError) Unwrap() error { return e.err }

// goList lists patterns and all their dependencies for darwin/arch, in
// dependency order (go list -deps prints a package after its imports).
// dir is the directory go list runs in; empty means the current one.
func goList(ctx context.Context, dir, arch string, patterns []string) ([]*listedPackage, error) {
	args := append([]string{"list", "-e", "-deps", "-json=" + listFields, "--"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	// Later entries win in exec, so these override the caller's values while
	// GOFLAGS and everything else pass through unchanged.
	cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, &goListError{arch: arch, err: err, stderr: stderr.String()}
	}
	// go list reports error positions relative to the directory it ran in.
	base, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve directory %q: %w", dir, err)
	}
	var pkgs []*listedPackage
	dec := json.NewDecoder(&stdout)
	for {
		p := new(listedPackage)
		if err := dec.Decode(p); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, &goListError{arch: arch, err: fmt.Errorf("decode output: %w", err), stderr: stderr.String()}
		}
		if p.Error != nil && p.Error.Pos != "" && !filepath.IsAbs(p.Error.Pos) {
			p.Error.Pos = filepath.Join(base, p.Error.Pos)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, &goListError{arch: arch, err: errors.New("no packages matched"), stderr: stderr.String()}
	}
	return pkgs, nil
}

// isMain reports whether p belongs to a main module, the one being
// checked: its type errors fail the run.
func (p *listedPackage) isMain() bool { return p.Module != nil && p.Module.Main }

// noGoFiles reports whether p's only trouble is that none of its Go files
// is built for darwin, as for a Linux-only command, or that it holds only
// tests: such a package is skipped, not reported.
func (p *listedPackage) noGoFiles() bool {
	if len(p.GoFiles)+len(p.CgoFiles) > 0 {
		return false
	}
	if p.Error == nil {
		return true
	}
	// Two wordings of the go command's NoGoError; its third, "no Go files
	// in", means a directory without Go code and is reported.
	msg := p.Error.Err
	return strings.HasPrefix(msg, "build constraints exclude all Go files in") ||
		strings.HasPrefix(msg, "no non-test Go files in")
}

// fatalListError reports whether p's go list error fails the run: p is in
// the main module or was named on the command line (a typo, a directory
// that does not exist).
func (p *listedPackage) fatalListError() bool { return p.isMain() || !p.DepOnly }

// goVersion is the language version to check p with: its module's go
// directive; go1.16 for a module without one, as the go command does; the
// checker's own for the standard library.
func (p *listedPackage) goVersion() string {
	switch {
	case p.Standard || p.Module == nil:
		return ""
	case p.Module.GoVersion == "":
		return "go1.16"
	default:
		return "go" + p.Module.GoVersion
	}
}
