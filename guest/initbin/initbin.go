// Package initbin carries the guest's PID 1 (guest/cmd/sandbar-init) inside
// the sandbar binary, so that building a guest image needs no Go toolchain
// on the user's machine.
//
// `make build` compiles sandbar-init (static, linux, the host's
// architecture: a Mac on arm64 boots arm64 guests) into bin/ before it
// compiles sandbar. A binary built without make, such as by `go run .` or
// `go test`, has no init embedded: Binary then says so, and callers that
// have the source at hand build it with Build instead.
//
// It is not the init itself (guest/cmd/sandbar-init) and not the image
// builder (guest/image): it only supplies the init's bytes, embedded or
// built.
package initbin

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed bin
var files embed.FS

// Name is the file name of the embedded binary under bin/.
const Name = "sandbar-init"

// ErrNotEmbedded means this sandbar binary was built without its guest init.
var ErrNotEmbedded = errors.New("this sandbar binary was built without the guest init: build it with `make build`")

// Binary returns the embedded sandbar-init.
func Binary() ([]byte, error) {
	b, err := fs.ReadFile(files, "bin/"+Name)
	if errors.Is(err, fs.ErrNotExist) || len(b) == 0 {
		return nil, ErrNotEmbedded
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Build compiles sandbar-init from the module at moduleDir for linux/arch
// with the go command, statically (CGO off), and returns it. It is for
// development and tests, where the source is at hand.
func Build(ctx context.Context, moduleDir, arch string) ([]byte, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("build sandbar-init: %w (install Go, or use a sandbar built with `make build`)", err)
	}
	tmp, err := os.MkdirTemp("", "sandbar-init-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, Name)
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./guest/cmd/sandbar-init")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("build sandbar-init for linux/%s: %w\n%s", arch, err, stderr.String())
	}
	return os.ReadFile(out)
}

// ModuleRoot walks up from dir to the directory holding sandbar's go.mod,
// for callers that want Build from inside a checkout.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module sandbar\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no sandbar source tree above %s", dir)
		}
	}
}
