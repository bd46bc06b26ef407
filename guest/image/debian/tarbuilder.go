package debian

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"
)

// DefaultSkip is the documentation and translations a guest never reads,
// left out of the root file system to keep it small.
func DefaultSkip() []string {
	return []string{
		"usr/share/doc",
		"usr/share/info",
		"usr/share/lintian",
		"usr/share/locale",
		"usr/share/man",
	}
}

// TarBuilder assembles the contents of several packages, and files of the
// caller's own, into one tar stream laid out as a merged-/usr root file
// system, ready for hcsshim's tar2ext4.
//
// tar2ext4 builds the file system as the stream goes and cannot take back
// a regular file it has written, nor make a file's parent for it with the
// right mode, so the builder keeps these rules:
//   - every entry's parent directories come before it (missing ones are
//     made with mode 0755);
//   - each path appears once: a directory seen again is skipped, and for
//     any other path the first entry wins, so a caller replaces a
//     package's file by adding its own first;
//   - a path below a symlink the stream already holds (/var/run → /run) is
//     moved to where the link points, as dpkg would write it;
//   - everything is owned by root, and modes and times are kept.
type TarBuilder struct {
	// Skip lists paths (merged-/usr, no leading slash) whose entries, and
	// everything below them, AddDeb leaves out. NewTarBuilder sets it to
	// DefaultSkip(); set it to nil to keep everything.
	Skip []string
	// ModTime is the time of entries the builder makes itself; zero means
	// the Unix epoch, so the same input makes the same bytes.
	ModTime time.Time
	// Modes sets the permission bits of the paths it names (merged-/usr,
	// no leading slash), whoever adds them: the chmod a maintainer script
	// would have done.
	Modes map[string]int64
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	tw     *tar.Writer
	dirs   map[string]bool
	files  map[string]bool   // non-directories written
	links  map[string]string // symlinks written → their targets
	closed bool
}

// NewTarBuilder returns a builder writing to w.
func NewTarBuilder(w io.Writer) *TarBuilder {
	return &TarBuilder{
		Skip:  DefaultSkip(),
		tw:    tar.NewWriter(w),
		dirs:  map[string]bool{"": true},
		files: map[string]bool{},
		links: map[string]string{},
	}
}

// AddDeb adds every entry of the package's data.tar, moved to its
// merged-/usr place.
func (b *TarBuilder) AddDeb(debPath string) error {
	_, err := b.AddDebFiles(debPath)
	return err
}

// AddDebFiles is AddDeb, and returns every path of the package's data.tar
// as dpkg lists it in /var/lib/dpkg/info/<package>.list: absolute, as the
// package names it (not moved to merged /usr), "/." for the root, in
// archive order, skipped paths included.
func (b *TarBuilder) AddDebFiles(debPath string) ([]string, error) {
	if b.closed {
		return nil, errors.New("tar builder: AddDeb after Close")
	}
	var list []string
	err := Unpack(debPath, func(hdr *tar.Header, r io.Reader) error {
		name := strings.Trim(path.Clean("/"+hdr.Name), "/")
		if name == "" {
			list = append(list, "/.")
		} else {
			list = append(list, "/"+name)
		}
		return b.add(debPath, hdr, r)
	})
	if err != nil {
		return nil, fmt.Errorf("add %s to the root file system: %w", path.Base(debPath), err)
	}
	return list, nil
}

// AddFile adds a regular file. name is folded like a package's paths
// ("sbin/init" becomes usr/sbin/init). It fails if the path is taken, so
// add files that replace a package's before the package.
func (b *TarBuilder) AddFile(name string, mode int64, data []byte) error {
	return b.addOwn(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}, data)
}

// AddSymlink adds a symbolic link at name pointing to target.
func (b *TarBuilder) AddSymlink(name, target string) error {
	return b.addOwn(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}, nil)
}

// AddDir adds a directory; adding one that exists is not an error, but its
// mode stays what the first entry said.
func (b *TarBuilder) AddDir(name string, mode int64) error {
	return b.addOwn(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode}, nil)
}

func (b *TarBuilder) addOwn(hdr *tar.Header, data []byte) error {
	if b.closed {
		return fmt.Errorf("tar builder: add %s after Close", hdr.Name)
	}
	name := b.resolve(MergedUsrPath(hdr.Name))
	if name == "" {
		return fmt.Errorf("tar builder: %q names the root", hdr.Name)
	}
	if hdr.Typeflag != tar.TypeDir && (b.files[name] || b.dirs[name]) {
		return fmt.Errorf("tar builder: %s is already in the image: add your own files before the packages they replace", name)
	}
	if hdr.Typeflag == tar.TypeSymlink {
		hdr.Linkname = MergedUsrLink(hdr.Name, hdr.Linkname)
	}
	hdr.ModTime = b.modTime()
	return b.write(name, hdr, bytes.NewReader(data))
}

// add writes one entry of a package.
func (b *TarBuilder) add(deb string, hdr *tar.Header, r io.Reader) error {
	name := MergedUsrPath(hdr.Name)
	if name == "" || b.skipped(name) {
		return nil
	}
	name = b.resolve(name)
	if hdr.Typeflag == tar.TypeDir {
		// A directory where the image has a symlink (var/run → /run) is
		// the directory the link points to, as dpkg treats it.
		name = b.resolveLink(name)
	}
	switch hdr.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeSymlink, tar.TypeLink, tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
	default:
		b.logger().Warn("skipping unsupported tar entry", "package", path.Base(deb), "path", name, "type", string(hdr.Typeflag))
		return nil
	}
	switch {
	case hdr.Typeflag == tar.TypeDir && b.dirs[name]:
		return nil
	case hdr.Typeflag == tar.TypeDir && b.files[name]:
		b.logger().Warn("package has a directory where another has a file; keeping the file", "package", path.Base(deb), "path", name)
		return nil
	case hdr.Typeflag != tar.TypeDir && b.dirs[name]:
		b.logger().Warn("package has a file where another has a directory; keeping the directory", "package", path.Base(deb), "path", name)
		return nil
	case hdr.Typeflag != tar.TypeDir && b.files[name]:
		b.logger().Debug("path already in the image; keeping the first", "package", path.Base(deb), "path", name)
		return nil
	}
	out := &tar.Header{
		Typeflag: hdr.Typeflag,
		Mode:     hdr.Mode,
		Size:     hdr.Size,
		ModTime:  hdr.ModTime,
		Devmajor: hdr.Devmajor,
		Devminor: hdr.Devminor,
	}
	switch hdr.Typeflag {
	case tar.TypeSymlink:
		out.Linkname = MergedUsrLink(hdr.Name, hdr.Linkname)
	case tar.TypeLink:
		target := b.resolve(MergedUsrPath(hdr.Linkname))
		if !b.files[target] {
			b.logger().Warn("hard link to a file not in the image; skipping it", "package", path.Base(deb), "path", name, "target", target)
			return nil
		}
		out.Linkname = target
		out.Size = 0
	}
	return b.write(name, out, r)
}

// write emits hdr at name (already folded and resolved), after any missing
// parents.
func (b *TarBuilder) write(name string, hdr *tar.Header, r io.Reader) error {
	if err := b.parents(name); err != nil {
		return err
	}
	hdr.Name = name
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
	hdr.Mode &= 0o7777
	if m, ok := b.Modes[name]; ok && hdr.Typeflag != tar.TypeSymlink {
		hdr.Mode = m
	}
	hdr.AccessTime, hdr.ChangeTime, hdr.PAXRecords, hdr.Format = time.Time{}, time.Time{}, nil, tar.FormatUnknown
	switch hdr.Typeflag {
	case tar.TypeDir:
		if b.dirs[name] {
			return nil
		}
		hdr.Name += "/"
		b.dirs[name] = true
	case tar.TypeSymlink:
		b.links[name] = hdr.Linkname
		b.files[name] = true
	default:
		b.files[name] = true
	}
	if err := b.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if hdr.Typeflag == tar.TypeReg && hdr.Size > 0 {
		if _, err := io.Copy(b.tw, r); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// parents emits the directories above name that are not there yet.
func (b *TarBuilder) parents(name string) error {
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		dir := name[:i]
		if b.dirs[dir] {
			continue
		}
		if b.files[dir] {
			return fmt.Errorf("write %s: %s is not a directory in the image", name, dir)
		}
		if err := b.write(dir, &tar.Header{Typeflag: tar.TypeDir, Mode: 0o755, ModTime: b.modTime()}, nil); err != nil {
			return err
		}
	}
	return nil
}

// resolve moves name below the target of any symlink among its parents,
// as writing through that link would.
func (b *TarBuilder) resolve(name string) string {
	for hops := 0; hops < 40; hops++ {
		moved := false
		for i := 0; i < len(name); i++ {
			if name[i] != '/' {
				continue
			}
			target, ok := b.links[name[:i]]
			if !ok {
				continue
			}
			base := path.Join(path.Dir(name[:i]), target)
			if path.IsAbs(target) {
				base = target
			}
			name = MergedUsrPath(path.Join(base, name[i+1:]))
			moved = true
			break
		}
		if !moved {
			break
		}
	}
	return name
}

// resolveLink follows name itself while it is a symlink the image holds.
func (b *TarBuilder) resolveLink(name string) string {
	for hops := 0; hops < 40; hops++ {
		target, ok := b.links[name]
		if !ok {
			break
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(name), target)
		}
		name = b.resolve(MergedUsrPath(target))
	}
	return name
}

func (b *TarBuilder) skipped(name string) bool {
	for _, s := range b.Skip {
		if name == s || strings.HasPrefix(name, s+"/") {
			return true
		}
	}
	return false
}

// Close adds the merged-/usr links (bin → usr/bin, sbin, lib, and lib32,
// lib64, libx32 where /usr has them) and finishes the tar stream. It does
// not close the writer given to NewTarBuilder.
func (b *TarBuilder) Close() error {
	if b.closed {
		return nil
	}
	for _, d := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		always := d == "bin" || d == "sbin" || d == "lib"
		if !always && !b.dirs["usr/"+d] {
			continue
		}
		if err := b.write("usr/"+d, &tar.Header{Typeflag: tar.TypeDir, Mode: 0o755, ModTime: b.modTime()}, nil); err != nil {
			return err
		}
		if err := b.write(d, &tar.Header{Typeflag: tar.TypeSymlink, Linkname: "usr/" + d, Mode: 0o777, ModTime: b.modTime()}, nil); err != nil {
			return err
		}
	}
	b.closed = true
	if err := b.tw.Close(); err != nil {
		return fmt.Errorf("finish the root file system tar: %w", err)
	}
	return nil
}

func (b *TarBuilder) modTime() time.Time {
	if b.ModTime.IsZero() {
		return time.Unix(0, 0)
	}
	return b.ModTime
}

func (b *TarBuilder) logger() *slog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return slog.Default()
}
