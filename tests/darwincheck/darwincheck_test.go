package main

import (
	"bytes"
	"context"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// result is one in-process run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// runTool runs the command in dir with args, reusing cache.
func runTool(t *testing.T, cache *depCache, dir string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runCached(t.Context(), cache, args, dir, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// errorLines are the error lines of a run's stderr: not the closing count,
// nor what -v adds (timings, skipped packages, dependency errors).
func errorLines(stderr string) []string {
	var out []string
	for l := range strings.SplitSeq(strings.TrimSpace(stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "darwincheck: ") && !strings.HasPrefix(l, "dependency: ") && !strings.HasPrefix(l, "darwin/") {
			out = append(out, l)
		}
	}
	return out
}

const (
	magicErr     = "tests/darwincheck/testdata/magic/magic_darwin.go:9:12: undefined: vz.NewMagicBootLoader"
	wrongTypeErr = `tests/darwincheck/testdata/wrongtype/wrongtype_darwin.go:9:47: cannot use "two" (untyped string constant) as uint value in argument to vz.NewVirtualMachineConfiguration`
)

var summary = regexp.MustCompile(`^darwincheck: \d+ packages OK for darwin/arm64, darwin/amd64 \(\d+ of the module\) in \d+\.\ds\n$`)

// TestVZ checks the fixture packages under testdata, which use
// github.com/Code-Hex/vz/v3 through the main module's go.mod. Its parts
// share one cache, so the standard library is checked once per
// architecture.
func TestVZ(t *testing.T) {
	cache := newDepCache()
	t.Run("fixtures", func(t *testing.T) { testFixtures(t, cache) })
	t.Run("deterministic", func(t *testing.T) { testDeterministic(t, cache) })
	t.Run("api", func(t *testing.T) { testVZAPIComplete(t, cache) })
}

func testFixtures(t *testing.T, cache *depCache) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErrs []string
		wantOut  string // a substring of stdout
	}{
		{name: "correct vz use", args: []string{"./testdata/good"}, wantOut: "(1 of the module)"},
		{name: "missing function", args: []string{"./testdata/magic"}, wantCode: exitTypes, wantErrs: []string{magicErr}},
		{name: "wrong argument type", args: []string{"./testdata/wrongtype"}, wantCode: exitTypes, wantErrs: []string{wrongTypeErr}},
		{name: "linux-only type error unseen", args: []string{"./testdata/linuxonly"}, wantOut: "(1 of the module)"},
		{
			name:     "all fixtures",
			args:     []string{"./testdata/good", "./testdata/wrongtype", "./testdata/linuxonly", "./testdata/magic"},
			wantCode: exitTypes,
			wantErrs: []string{magicErr, wrongTypeErr},
		},
		{name: "linux-only command skipped", args: []string{"-v", "./testdata/linuxcmd"}, wantOut: "(0 of the module)"},
		{name: "one arch", args: []string{"-arch", "arm64", "./testdata/good"}, wantOut: "OK for darwin/arm64 ("},
		{name: "unknown arch", args: []string{"-arch", "ppc64", "./testdata/good"}, wantCode: exitUsage},
		{name: "no such directory", args: []string{"./testdata/nope"}, wantCode: exitUsage},
		{name: "bad flag", args: []string{"-nope"}, wantCode: exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runTool(t, cache, "", tt.args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if got := errorLines(r.stderr); tt.wantCode != exitUsage && !slices.Equal(got, tt.wantErrs) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.wantErrs, "\n"))
			}
			if !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("stdout %q does not contain %q", r.stdout, tt.wantOut)
			}
			if tt.wantCode == exitOK && len(tt.args) == 1 && !summary.MatchString(r.stdout) {
				t.Errorf("summary %q does not match %v", r.stdout, summary)
			}
		})
	}
}

// testDeterministic runs the same failing check from scratch and with
// cached dependencies and wants byte-identical output, dependency errors
// included.
func testDeterministic(t *testing.T, cache *depCache) {
	args := []string{"-v", "-arch", "arm64", "./testdata/magic", "./testdata/wrongtype"}
	first := runTool(t, newDepCache(), "", args...)
	second := runTool(t, cache, "", args...)
	if first.code != exitTypes {
		t.Fatalf("exit %d, want %d\n%s", first.code, exitTypes, first.stderr)
	}
	// -v prints a timing per architecture: drop it.
	timing := regexp.MustCompile(`(?m)^darwin/\w+: \d+ packages in .*\n`)
	a, b := timing.ReplaceAllString(first.stderr, ""), timing.ReplaceAllString(second.stderr, "")
	if a != b {
		t.Errorf("two runs differ:\n%s\n---\n%s", a, b)
	}
}

// testVZAPIComplete checks that faking cgo leaves every exported
// identifier of vz with a proper type, so that our misuse of any of them is
// caught rather than hidden behind an invalid type.
func testVZAPIComplete(t *testing.T, cache *depCache) {
	const vzPath = "github.com/Code-Hex/vz/v3"
	for _, arch := range []string{"arm64", "amd64"} {
		t.Run(arch, func(t *testing.T) {
			ctx := t.Context()
			pkgs, err := goList(ctx, "", arch, []string{vzPath})
			if err != nil {
				t.Fatal(err)
			}
			res, err := checkArch(ctx, arch, pkgs, newFileCache(), cache, make(chan struct{}, 2))
			if err != nil {
				t.Fatal(err)
			}
			pkg := res.types[vzPath]
			if pkg == nil {
				t.Fatalf("%s was not type-checked", vzPath)
			}
			qual := types.RelativeTo(pkg)
			var objs []types.Object
			for _, name := range pkg.Scope().Names() {
				obj := pkg.Scope().Lookup(name)
				if !obj.Exported() {
					continue
				}
				objs = append(objs, obj)
				if named, ok := obj.Type().(*types.Named); ok && obj == named.Obj() {
					for m := range named.Methods() {
						if m.Exported() {
							objs = append(objs, m)
						}
					}
				}
			}
			for _, obj := range objs {
				if s := types.ObjectString(obj, qual); strings.Contains(s, "invalid type") {
					t.Errorf("%s: %s", arch, s)
				}
			}
			if len(objs) < 250 {
				t.Errorf("only %d exported identifiers in %s; want its whole API (250+)", len(objs), vzPath)
			}
			wantSigs := map[string]string{
				"NewVirtualMachineConfiguration":     "func NewVirtualMachineConfiguration(bootLoader BootLoader, cpu uint, memorySize uint64) (*VirtualMachineConfiguration, error)",
				"NewLinuxBootLoader":                 "func NewLinuxBootLoader(vmlinuz string, opts ...LinuxBootLoaderOption) (*LinuxBootLoader, error)",
				"NewVirtioSocketDeviceConfiguration": "func NewVirtioSocketDeviceConfiguration() (*VirtioSocketDeviceConfiguration, error)",
			}
			for name, want := range wantSigs {
				obj := pkg.Scope().Lookup(name)
				if obj == nil {
					t.Errorf("%s.%s missing", vzPath, name)
					continue
				}
				if got := types.ObjectString(obj, qual); got != want {
					t.Errorf("%s:\n got %s\nwant %s", name, got, want)
				}
			}
		})
	}
}

// TestFyne checks a separate fixture module that uses Fyne, whose GLFW and
// OpenGL dependencies are heavy cgo. It works offline from the module cache.
func TestFyne(t *testing.T) {
	if testing.Short() {
		t.Skip("checks Fyne and the standard library for two architectures")
	}
	dir := filepath.Join("testdata", "fynemod")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "-mod=readonly")
	cmd := exec.CommandContext(t.Context(), "go", "list", "-e", "-deps", "-f", "{{with .Error}}{{.Err}}{{end}}", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Skipf("Fyne's modules are not in the module cache (%v: %s); run `go mod download` in %s", err, firstLine(out), dir)
	}

	cache := newDepCache()
	tests := []struct {
		name     string
		pkg      string
		wantCode int
		wantErrs []string
	}{
		{name: "window and tray", pkg: "./ok"},
		{
			name: "wrong argument type", pkg: "./bad", wantCode: exitTypes,
			wantErrs: []string{"bad/bad.go:12:31: cannot use 3 (untyped int constant) as string value in argument to widget.NewLabel"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runTool(t, cache, dir, tt.pkg)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if got := errorLines(r.stderr); !slices.Equal(got, tt.wantErrs) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.wantErrs, "\n"))
			}
		})
	}
}

// TestModule is the real thing: the whole Sandbar module, both
// architectures.
func TestModule(t *testing.T) {
	if testing.Short() {
		t.Skip("checks the whole module and the standard library for two architectures")
	}
	r := runTool(t, newDepCache(), filepath.Join("..", ".."), "./...")
	if r.code != exitOK {
		t.Fatalf("darwin type-check of the module: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Log(strings.TrimSpace(r.stdout))
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// TestCancel checks that a cancelled run stops and leaves no goroutine
// waiting: checkArch returns only after every package's goroutine ends.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pkgs, err := goList(ctx, "", "arm64", []string{"./testdata/good"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := checkArch(ctx, "arm64", pkgs, newFileCache(), nil, make(chan struct{}, 2)); err == nil {
		t.Fatal("checkArch after cancel: no error")
	}
}
