package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/klauspost/compress/gzip"

	"sandbar/guest/image/download"
	"sandbar/guest/image/npm"
)

// AgentBinary is where the agent's executable sits on agent.ext4, which
// the guest mounts at /opt/agent (so /opt/agent/bin/claude).
const AgentBinary = "bin/claude"

// fetchAgent downloads the agent's npm tarball from registry (the public
// registry when empty), verified against spec.Integrity.
func fetchAgent(ctx context.Context, c *download.Cache, registry string, spec AgentSpec) (string, error) {
	url, err := npm.TarballURL(registry, spec.Package, spec.Version)
	if err != nil {
		return "", err
	}
	want, err := download.ParseSRI(spec.Integrity)
	if err != nil {
		return "", fmt.Errorf("agent %s@%s: bad integrity %q: %w", spec.Package, spec.Version, spec.Integrity, err)
	}
	p, err := c.Fetch(ctx, url, want)
	if err != nil {
		return "", fmt.Errorf("download agent %s@%s: %w", spec.Package, spec.Version, err)
	}
	return p, nil
}

// writeAgentTar streams the agent disk's contents into w: the binary from
// the npm tarball at tgz as bin/claude (0755), and a VERSION file. It
// returns the binary's size.
func writeAgentTar(ctx context.Context, w io.Writer, tgz string, spec AgentSpec) (int64, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return 0, fmt.Errorf("open agent tarball: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("agent tarball %s: %w", path.Base(tgz), err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	want := path.Clean(spec.Binary)
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("agent %s@%s has no %s: set AgentSpec.Binary to the executable's path in its tarball", spec.Package, spec.Version, spec.Binary)
		}
		if err != nil {
			return 0, fmt.Errorf("read agent tarball %s: %w", path.Base(tgz), err)
		}
		if path.Clean(hdr.Name) != want || hdr.Typeflag != tar.TypeReg {
			continue
		}
		tw := tar.NewWriter(w)
		mtime := hdr.ModTime
		dir := &tar.Header{Typeflag: tar.TypeDir, Name: "bin/", Mode: 0o755, ModTime: mtime}
		if err := tw.WriteHeader(dir); err != nil {
			return 0, err
		}
		bin := &tar.Header{Typeflag: tar.TypeReg, Name: AgentBinary, Mode: 0o755, Size: hdr.Size, ModTime: mtime}
		if err := tw.WriteHeader(bin); err != nil {
			return 0, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return 0, fmt.Errorf("copy agent binary: %w", err)
		}
		version := []byte(spec.Version + "\n")
		vh := &tar.Header{Typeflag: tar.TypeReg, Name: "VERSION", Mode: 0o644, Size: int64(len(version)), ModTime: mtime}
		if err := tw.WriteHeader(vh); err != nil {
			return 0, err
		}
		if _, err := tw.Write(version); err != nil {
			return 0, err
		}
		return hdr.Size, tw.Close()
	}
}
