package main

import (
	"slices"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	const root = "/m"
	mod := func(file string, line, col int, msg string) diag {
		return diag{pkg: "m/p", fatal: true, root: root, file: file, line: line, col: col, msg: msg}
	}
	dep := diag{pkg: "x/y", file: "/cache/x/y.go", line: 3, col: 4, msg: "spurious"}
	arm := &archResult{arch: "arm64", diags: []diag{
		mod("/m/p/b.go", 10, 1, "ten"),
		mod("/m/p/b.go", 9, 1, "nine"),
		mod("/m/p/a_arm64.go", 1, 1, "arm only"),
		mod("", 0, 0, "no position"),
		dep,
	}}
	amd := &archResult{arch: "amd64", diags: []diag{
		mod("/m/p/b.go", 9, 1, "nine"),
		mod("/m/p/b.go", 10, 1, "ten"),
		mod("", 0, 0, "no position"),
		dep,
	}}
	mainLines, depLines := report([]*archResult{arm, amd})
	wantMain := []string{
		"m/p: no position",
		"p/a_arm64.go:1:1: arm only (darwin/arm64 only)",
		"p/b.go:9:1: nine",
		"p/b.go:10:1: ten",
	}
	if !slices.Equal(mainLines, wantMain) {
		t.Errorf("main lines:\n%s\nwant:\n%s", strings.Join(mainLines, "\n"), strings.Join(wantMain, "\n"))
	}
	if want := []string{"/cache/x/y.go:3:4: spurious"}; !slices.Equal(depLines, want) {
		t.Errorf("dependency lines %q, want %q", depLines, want)
	}
}

func TestParseArches(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "arm64,amd64", want: []string{"arm64", "amd64"}},
		{in: "amd64", want: []string{"amd64"}},
		{in: " arm64 , arm64,", want: []string{"arm64"}},
		{in: "", wantErr: true},
		{in: "arm64,386", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseArches(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("parseArches(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSplitPos(t *testing.T) {
	tests := []struct {
		in        string
		file      string
		line, col int
	}{
		{in: "/a/b.go:3:7", file: "/a/b.go", line: 3, col: 7},
		{in: "/a/b.go:3", file: "/a/b.go", line: 3},
		{in: "/a/b.go", file: "/a/b.go"},
		{in: "", file: ""},
	}
	for _, tt := range tests {
		file, line, col := splitPos(tt.in)
		if file != tt.file || line != tt.line || col != tt.col {
			t.Errorf("splitPos(%q) = %q, %d, %d; want %q, %d, %d", tt.in, file, line, col, tt.file, tt.line, tt.col)
		}
	}
}

func TestRelTo(t *testing.T) {
	tests := []struct{ root, file, want string }{
		{root: "/m", file: "/m/a/b.go", want: "a/b.go"},
		{root: "/m", file: "/other/b.go", want: "/other/b.go"},
		{root: "/m", file: "/mx/b.go", want: "/mx/b.go"},
		{root: "", file: "/m/b.go", want: "/m/b.go"},
		{root: "/m", file: "", want: ""},
	}
	for _, tt := range tests {
		if got := relTo(tt.root, tt.file); got != tt.want {
			t.Errorf("relTo(%q, %q) = %q, want %q", tt.root, tt.file, got, tt.want)
		}
	}
}

func TestNoGoFiles(t *testing.T) {
	tests := []struct {
		name string
		p    listedPackage
		want bool
	}{
		{name: "linux-only", p: listedPackage{Error: &listedError{Err: "build constraints exclude all Go files in /m/init"}}, want: true},
		{name: "tests only", p: listedPackage{Error: &listedError{Err: "no non-test Go files in /m/tests"}}, want: true},
		{name: "empty directory", p: listedPackage{Error: &listedError{Err: "no Go files in /m/tests"}}},
		{name: "other error", p: listedPackage{Error: &listedError{Err: "import cycle not allowed"}}},
		{name: "has files", p: listedPackage{GoFiles: []string{"a.go"}, Error: &listedError{Err: "build constraints exclude all Go files in /m"}}},
		{name: "cgo files only", p: listedPackage{CgoFiles: []string{"a.go"}}},
	}
	for _, tt := range tests {
		if got := tt.p.noGoFiles(); got != tt.want {
			t.Errorf("%s: noGoFiles() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
