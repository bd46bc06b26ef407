package debian

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Unpack streams the entries of a .deb's data.tar (plain, or compressed
// with xz, zstd, gzip or bzip2) to fn, in archive order. r is valid only
// until fn returns. Names are as the package has them ("./usr/bin/ls");
// see MergedUsrPath.
func Unpack(debPath string, fn func(hdr *tar.Header, r io.Reader) error) error {
	return walkMember(debPath, "data.tar", fn)
}

// Control returns the fields of a .deb's control file (from control.tar).
func Control(debPath string) (map[string]string, error) {
	var fields map[string]string
	err := walkMember(debPath, "control.tar", func(hdr *tar.Header, r io.Reader) error {
		if strings.TrimPrefix(hdr.Name, "./") != "control" {
			return nil
		}
		return readStanzas(r, func(f map[string]string) error {
			if fields == nil {
				fields = f
			}
			return nil
		})
	})
	if err == nil && fields == nil {
		err = fmt.Errorf("%s: control.tar has no control file: the package is damaged; delete it from the download cache", debPath)
	}
	return fields, err
}

// ControlFiles returns the named members of a .deb's control.tar
// ("md5sums", "conffiles"); a member the package lacks is left out.
func ControlFiles(debPath string, names ...string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := walkMember(debPath, "control.tar", func(hdr *tar.Header, r io.Reader) error {
		name := strings.TrimPrefix(hdr.Name, "./")
		if hdr.Typeflag != tar.TypeReg || !slices.Contains(names, name) {
			return nil
		}
		b, err := io.ReadAll(io.LimitReader(r, 64<<20))
		files[name] = b
		return err
	})
	return files, err
}

// walkMember finds the ar member whose name starts with prefix ("data.tar",
// "control.tar"), decompresses it by its extension and hands its entries
// to fn.
func walkMember(debPath, prefix string, fn func(hdr *tar.Header, r io.Reader) error) error {
	f, err := os.Open(debPath)
	if err != nil {
		return fmt.Errorf("open package: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	fail := func(err error) error {
		return fmt.Errorf("%s: %w: the package is damaged; delete it from the download cache and rebuild", debPath, err)
	}
	magic := make([]byte, 8)
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != "!<arch>\n" {
		return fail(errors.New("not a Debian package (no ar header)"))
	}
	for {
		name, size, err := nextArMember(br)
		if err == io.EOF {
			return fail(fmt.Errorf("no %s member", prefix))
		}
		if err != nil {
			return fail(err)
		}
		if !strings.HasPrefix(name, prefix) {
			if _, err := br.Discard(int(size + size%2)); err != nil {
				return fail(fmt.Errorf("member %s: %w", name, err))
			}
			continue
		}
		body := &io.LimitedReader{R: br, N: size}
		dec, closeDec, err := decompressor(strings.TrimPrefix(name, prefix), body)
		if err != nil {
			return fail(fmt.Errorf("member %s: %w", name, err))
		}
		defer closeDec()
		tr := tar.NewReader(dec)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				// Read to the end, so a truncated or corrupt member (its
				// checksum is at the end) is noticed.
				if _, err := io.Copy(io.Discard, dec); err != nil {
					return fail(fmt.Errorf("member %s: %w", name, err))
				}
				if _, err := io.CopyN(io.Discard, body, body.N); err != nil {
					return fail(fmt.Errorf("member %s: truncated: %w", name, err))
				}
				return nil
			}
			if err != nil {
				return fail(fmt.Errorf("member %s: %w", name, err))
			}
			if err := fn(hdr, tr); err != nil {
				return err
			}
		}
	}
}

// nextArMember reads one 60-byte ar header and returns the member's name
// and size; the member's data follows in r, padded to an even length.
func nextArMember(r io.Reader) (string, int64, error) {
	var h [60]byte
	n, err := io.ReadFull(r, h[:])
	if n == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) {
		return "", 0, io.EOF
	}
	if err != nil {
		return "", 0, fmt.Errorf("truncated ar header: %w", err)
	}
	if string(h[58:60]) != "`\n" {
		return "", 0, errors.New("bad ar header")
	}
	name := strings.TrimRight(strings.TrimSpace(string(h[0:16])), "/")
	size, err := strconv.ParseInt(strings.TrimSpace(string(h[48:58])), 10, 64)
	if err != nil || size < 0 {
		return "", 0, fmt.Errorf("bad ar member size %q", h[48:58])
	}
	return name, size, nil
}

// decompressor returns a reader of the uncompressed tar for a member whose
// name ends in ext ("", ".xz", ".zst", ".gz", ".bz2").
func decompressor(ext string, r io.Reader) (io.Reader, func(), error) {
	nop := func() {}
	switch ext {
	case "":
		return r, nop, nil
	case ".xz":
		xr, err := xz.NewReader(r)
		return xr, nop, err
	case ".zst":
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, nop, err
		}
		return zr, zr.Close, nil
	case ".gz":
		gr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nop, err
		}
		return gr, func() { gr.Close() }, nil
	case ".bz2":
		return bzip2.NewReader(r), nop, nil
	}
	return nil, nop, fmt.Errorf("unsupported compression %q", ext)
}
