// Command darwincheck type-checks Go packages as they would be compiled for
// macOS (GOOS=darwin, arm64 and amd64, cgo on) on a machine that has neither
// a Mac nor a C toolchain, so that darwin-only code (vm/vz over
// github.com/Code-Hex/vz/v3, the Fyne menu-bar code) never rots unseen.
//
// Usage:
//
//	go run ./tests/darwincheck [-arch arm64,amd64] [-v] [packages]
//
// The packages default to ./... . For each architecture it runs
// `go list -e -deps -json` with GOOS=darwin GOARCH=<arch> CGO_ENABLED=1 (and
// the caller's GOFLAGS), so file selection by build constraints is exactly
// the go command's. It then parses and type-checks every listed package,
// standard library and dependencies included, from source, in dependency
// order, with go/types: GoFiles and CgoFiles, `import "C"` faked
// (types.Config.FakeImportC), gc sizes for the architecture and the Go
// version of the package's module. No cgo code is generated, so C.xxx
// expressions are not checked; everything written in Go is.
//
// Errors in the main module's packages are printed as file:line:col: message
// (paths relative to the module root) and make the command exit 1.
// Dependencies are checked with errors collected but not fatal, because a
// faked cgo can produce spurious errors in third-party cgo code (C constants
// in constant expressions, C types in arithmetic); their package objects
// stay complete and usable, so misuse of their API by our code is still
// caught. -v prints the dependency errors. Packages whose only problem is
// that no Go file matches darwin (Linux-only commands) are skipped.
//
// Exit status: 0 clean; 1 type errors in the module (or a go list error in
// one of its packages); 2 a usage error, a go list failure (its stderr is
// shown) or a named package that go list cannot find.
//
// It is not a build: it does not run cgo, link, or prove that the
// Objective-C side compiles.
package main
