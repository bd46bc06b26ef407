package hosttrust

import (
	"context"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// places are a Linux system's places of trust (see hosttrust_linux.go);
// apart from it so that a test can point them at folders of its own.
type places struct {
	// local are folders of certificates added on this machine.
	local []localDir
	// bundle is the system bundle, and pkg the folder of the
	// ca-certificates package's own certificates: what bundle holds
	// beyond them was added here. Without pkg the bundle is not read
	// (nothing tells what is the distribution's).
	bundle, pkg string
}

type localDir struct {
	path string
	exts []string
}

func (p places) collect(ctx context.Context, c *collector) error {
	for _, d := range p.local {
		if err := c.dir(ctx, d.path, d.exts); err != nil {
			return err
		}
	}
	if p.bundle == "" || p.pkg == "" {
		return nil
	}
	stock, err := fingerprints(ctx, p.pkg)
	if err != nil || len(stock) == 0 {
		return err // no package folder: the bundle cannot be told apart
	}
	data, err := readFile(p.bundle)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		c.skip(p.bundle, "%v", err)
		return nil
	}
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil
		}
		if b.Type != "CERTIFICATE" || stock[sha256.Sum256(b.Bytes)] {
			continue
		}
		c.der(p.bundle, b.Bytes)
	}
}

// fingerprints are the SHA-256 digests of every certificate under root;
// none when root does not exist.
func fingerprints(ctx context.Context, root string) (map[[32]byte]bool, error) {
	out := map[[32]byte]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for rest := data; ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			out[sha256.Sum256(b.Bytes)] = true
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.SkipDir) {
		return nil, fmt.Errorf("read the stock certificates in %s: %w", root, err)
	}
	return out, nil
}
