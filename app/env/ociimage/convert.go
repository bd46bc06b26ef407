package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/Microsoft/hcsshim/ext4/tar2ext4"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// maxEntries bounds the files of one image: the converter and the
// flattening keep a small record per file in memory, which an image of
// millions of empty files would make large. Real images have tens of
// thousands.
const maxEntries = 4_000_000

// errConvertStopped tells the tar producer that nobody reads its stream.
var errConvertStopped = errors.New("ext4 conversion stopped")

// convert flattens img's layers (mutate.Extract: top layer first,
// whiteouts and opaque directories applied) and writes them as a
// read-only ext4 file at out, streaming: one layer's bytes at a time, from
// the registry or the saved tarball, into the file system being written.
// total is the bytes the layers will read, for progress: compressed, as
// they come from a registry (wire), or else unpacked.
func convert(ctx context.Context, out string, img v1.Image, p *pull, total int64, wire bool) (err error) {
	layers, err := img.Layers()
	if err != nil {
		return remoteErr(err, p)
	}
	rep := &reporter{fn: p.opts.Progress, p: Progress{BytesTotal: total, LayersTotal: len(layers)}}
	rep.report()
	counted := make([]v1.Layer, len(layers))
	for i, l := range layers {
		if !wire {
			counted[i] = &countedUncompressed{Layer: l, rep: rep}
			continue
		}
		if counted[i], err = countLayer(l, rep); err != nil {
			return remoteErr(err, p)
		}
	}
	f, err := os.OpenFile(out, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", out, cerr)
		}
	}()

	flat := mutate.Extract(layersOnly{Image: img, layers: counted})
	defer flat.Close()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		ferr := fixTar(ctx, flat, pw, p)
		pw.CloseWithError(ferr)
		done <- ferr
	}()
	maxDisk := int64(DefaultMaxBytes)
	if m := p.max + p.max/4; m > maxDisk {
		maxDisk = m
	}
	cerr := tar2ext4.ConvertTarToExt4(pr, f, tar2ext4.InlineData, tar2ext4.MaximumDiskSize(maxDisk))
	pr.CloseWithError(errConvertStopped)
	flat.Close()
	ferr := <-done
	// The stream's own failure (the registry, the size limit) is the
	// cause, unless it only failed because the converter stopped reading
	// (a full disk) and closed the stream under it.
	if ferr != nil && !errors.Is(ferr, errConvertStopped) && !errors.Is(ferr, io.ErrClosedPipe) {
		return remoteErr(ferr, p)
	}
	if cerr != nil {
		return fmt.Errorf("write the root file system of %s to %s: %w", p.refName(), out, cerr)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := f.Chmod(0o444); err != nil {
		return err
	}
	rep.finish()
	return nil
}

// layersOnly is img with its layers replaced by counted ones; Extract
// reads nothing but Layers.
type layersOnly struct {
	v1.Image
	layers []v1.Layer
}

func (l layersOnly) Layers() ([]v1.Layer, error) { return l.layers, nil }

// countLayer wraps a registry's layer so that its bytes, as they come
// over the wire, count towards rep.
func countLayer(l v1.Layer, rep *reporter) (v1.Layer, error) {
	mt, err := l.MediaType()
	if err != nil {
		return nil, err
	}
	if mt == types.DockerLayer || mt == types.OCILayer || mt == types.OCILayerZStd || mt == types.DockerForeignLayer ||
		mt == types.OCIRestrictedLayer {
		// Compressed on the wire: count those bytes, decompress after.
		return partial.CompressedToLayer(&countedCompressed{Layer: l, rep: rep})
	}
	return &countedUncompressed{Layer: l, rep: rep}, nil
}

type countedCompressed struct {
	v1.Layer
	rep *reporter
}

func (c *countedCompressed) Compressed() (io.ReadCloser, error) {
	rc, err := c.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	return &countingReader{rc: rc, rep: c.rep}, nil
}

type countedUncompressed struct {
	v1.Layer
	rep *reporter
}

func (c *countedUncompressed) Uncompressed() (io.ReadCloser, error) {
	rc, err := c.Layer.Uncompressed()
	if err != nil {
		return nil, err
	}
	return &countingReader{rc: rc, rep: c.rep}, nil
}

// countingReader counts a layer's bytes and its end.
type countingReader struct {
	rc   io.ReadCloser
	rep  *reporter
	done bool
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.rc.Read(b)
	c.rep.add(int64(n))
	if err == io.EOF && !c.done {
		c.done = true
		c.rep.layerDone()
	}
	return n, err
}

func (c *countingReader) Close() error { return c.rc.Close() }

// reporter serialises progress calls and thins them to one per MiB.
type reporter struct {
	mu   sync.Mutex
	fn   func(Progress)
	p    Progress
	last int64
}

func (r *reporter) add(n int64) {
	if r.fn == nil || n == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.BytesDone += n
	if r.p.BytesDone > r.p.BytesTotal {
		// A local tool's size is an estimate; never report past the end.
		r.p.BytesTotal = r.p.BytesDone
	}
	if r.p.BytesDone-r.last >= 1<<20 {
		r.last = r.p.BytesDone
		r.fn(r.p)
	}
}

func (r *reporter) layerDone() {
	if r.fn == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.LayersDone++
	r.last = r.p.BytesDone
	r.fn(r.p)
}

func (r *reporter) report() {
	if r.fn == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fn(r.p)
}

// finish reports the whole done: layers that a whiteout of the whole
// root left unread still count.
func (r *reporter) finish() {
	if r.fn == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p.BytesDone < r.p.BytesTotal {
		r.p.BytesDone = r.p.BytesTotal
	}
	r.p.LayersDone = r.p.LayersTotal
	r.fn(r.p)
}

// fixTar passes Extract's flattened stream on to tar2ext4 in the shape it
// takes: no entry for the root itself, only the file types ext4 holds, a
// hard link after its target (Extract goes top layer first, so a link may
// come before a target from a lower layer), and no more unpacked bytes
// than the size limit.
func fixTar(ctx context.Context, r io.Reader, w io.Writer, p *pull) error {
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
	written := map[string]bool{}
	var deferred []*tar.Header
	var unpacked int64
	entries := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the layers of %s: %w", p.refName(), err)
		}
		h.Name = strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if h.Name == "" {
			continue
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
			h.Typeflag = tar.TypeReg
		case tar.TypeLink:
			h.Linkname = strings.TrimPrefix(path.Clean("/"+h.Linkname), "/")
			if !written[h.Linkname] {
				deferred = append(deferred, h)
				continue
			}
		case tar.TypeSymlink, tar.TypeChar, tar.TypeBlock, tar.TypeDir, tar.TypeFifo:
		default:
			continue
		}
		if entries++; entries > maxEntries {
			return &Error{Kind: ErrTooLarge,
				Msg: fmt.Sprintf("%s has more than %d files, more than Sandbar converts: choose a smaller image", p.refName(), maxEntries)}
		}
		unpacked += h.Size
		if unpacked > p.max {
			return tooLarge(p, "unpacks to more than")
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("read the layers of %s: %w", p.refName(), err)
		}
		if h.Typeflag != tar.TypeDir {
			written[h.Name] = true
		}
	}
	// Links whose targets came later, in as many rounds as chains need.
	for len(deferred) > 0 {
		var left []*tar.Header
		for _, h := range deferred {
			if !written[h.Linkname] {
				left = append(left, h)
				continue
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			written[h.Name] = true
		}
		if len(left) == len(deferred) {
			for _, h := range left {
				slog.Warn("ociimage: hard link to a file no layer has, left out", "image", p.refName(), "link", h.Name, "target", h.Linkname)
			}
			break
		}
		deferred = left
	}
	return tw.Close()
}
