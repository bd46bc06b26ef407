package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/Microsoft/hcsshim/ext4/tar2ext4"

	"sandbar/guest/image/debian"
)

// entry is one file, directory or symlink the build writes into the root
// that no package ships: the work dpkg's maintainer scripts would have done.
type entry struct {
	name string // relative, no leading slash
	mode int64  // permission bits
	data []byte // regular file contents
	link string // symlink target, when set
	dir  bool
}

// Hostname is the guest's host name, in /etc/hostname and /etc/hosts.
const Hostname = "sandbar"

// systemFiles returns the root's generated files. pkgs is the set of
// package names in the root, which decides the alternatives links and
// which tools get their configuration; ca is the CA bundle; mirror is the
// Debian archive the image comes from, which apt's sources name.
func systemFiles(pkgs map[string]bool, ca []byte, mirror string) []entry {
	es := []entry{
		// Mount points and scratch directories.
		{name: "dev", mode: 0o755, dir: true},
		{name: "proc", mode: 0o555, dir: true},
		{name: "sys", mode: 0o555, dir: true},
		{name: "run", mode: 0o755, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
		{name: "var/tmp", mode: 0o1777, dir: true},
		{name: "home", mode: 0o755, dir: true},
		{name: "root", mode: 0o700, dir: true},
		{name: "workspace", mode: 0o755, dir: true},
		{name: "opt/agent", mode: 0o755, dir: true},
		{name: "mnt", mode: 0o755, dir: true},

		// Users: root and nobody. The supervisor adds the agent's user to
		// the session's writable overlay at run time.
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/shadow", mode: 0o600, data: []byte(shadow)},
		{name: "etc/gshadow", mode: 0o600, data: []byte(gshadow)},

		{name: "etc/hostname", mode: 0o644, data: []byte(Hostname + "\n")},
		{name: "etc/hosts", mode: 0o644, data: []byte(hosts)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte(nsswitch)},
		// sandbar-init rewrites it on the overlay with the VM's DNS server.
		{name: "etc/resolv.conf", mode: 0o644, data: []byte("# written by sandbar-init at boot\n")},
		{name: "etc/profile", mode: 0o644, data: []byte(profile)},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca},
	}
	if pkgs["apt"] {
		es = append(es, aptFiles(mirror)...)
	}
	if pkgs["libpam-runtime"] {
		// What pam-auth-update writes from /usr/share/pam-configs/unix,
		// which sudo's /etc/pam.d/sudo includes.
		for _, f := range pamCommon {
			es = append(es, entry{name: "etc/pam.d/" + f.name, mode: 0o644, data: []byte(f.data)})
		}
	}
	if pkgs["dash"] {
		es = append(es, entry{name: "usr/bin/sh", link: "dash"})
	} else {
		es = append(es, entry{name: "usr/bin/sh", link: "bash"})
	}
	// Links update-alternatives would have made, for the tools in the root.
	alternatives := []struct{ pkg, name, target string }{
		{"mawk", "usr/bin/awk", "mawk"},
		{"less", "usr/bin/pager", "less"},
		{"debianutils", "usr/bin/which", "which.debianutils"},
		// make's default CC and CXX.
		{"gcc", "usr/bin/cc", "gcc"},
		{"g++", "usr/bin/c++", "g++"},
	}
	for _, a := range alternatives {
		if pkgs[a.pkg] {
			es = append(es, entry{name: a.name, link: a.target})
		}
	}
	return es
}

const (
	passwd = "root:x:0:0:root:/root:/bin/bash\n" +
		"_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	group = "root:x:0:\n" +
		"tty:x:5:\n" +
		"disk:x:6:\n" +
		"sudo:x:27:\n" +
		"staff:x:50:\n" +
		"users:x:100:\n" +
		"nogroup:x:65534:\n"
	// Passwords are locked: nobody logs in; the supervisor runs processes.
	shadow = "root:*:19000:0:99999:7:::\n" +
		"_apt:*:19000:0:99999:7:::\n" +
		"nobody:*:19000:0:99999:7:::\n"
	gshadow = "root:*::\n" +
		"tty:*::\n" +
		"disk:*::\n" +
		"sudo:*::\n" +
		"staff:*::\n" +
		"users:*::\n" +
		"nogroup:*::\n"
	hosts = "127.0.0.1\tlocalhost\n" +
		"127.0.1.1\t" + Hostname + "\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n"
	nsswitch = "passwd: files\n" +
		"group: files\n" +
		"shadow: files\n" +
		"hosts: files dns\n" +
		"networks: files\n" +
		"protocols: files\n" +
		"services: files\n" +
		"ethers: files\n" +
		"rpc: files\n"
	profile = "PATH=/opt/agent/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n" +
		"export PATH\n" +
		"if [ -d /etc/profile.d ]; then\n" +
		"  for i in /etc/profile.d/*.sh; do\n" +
		"    if [ -r \"$i\" ]; then . \"$i\"; fi\n" +
		"  done\n" +
		"  unset i\n" +
		"fi\n"
)

// maintainerModes are the modes maintainer scripts set on files their
// packages ship otherwise: sudo's postinst makes /etc/sudoers 0440.
var maintainerModes = map[string]int64{
	"etc/sudoers": 0o440,
}

// caDir is where the ca-certificates package keeps Mozilla's roots.
const caDir = "usr/share/ca-certificates/mozilla/"

// collectCerts reads the Mozilla root certificates out of the
// ca-certificates package, keyed by file name.
func collectCerts(debPath string) (map[string][]byte, error) {
	certs := map[string][]byte{}
	err := debian.Unpack(debPath, func(hdr *tar.Header, r io.Reader) error {
		name := cleanName(hdr.Name)
		if hdr.Typeflag != tar.TypeReg || !strings.HasPrefix(name, caDir) || !strings.HasSuffix(name, ".crt") {
			return nil
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		certs[path.Base(name)] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read CA certificates from %s: %w", debPath, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("read CA certificates from %s: no certificates under /%s", debPath, caDir)
	}
	return certs, nil
}

// caBundle concatenates certificates in name order, as
// update-ca-certificates does, each ending in a newline.
func caBundle(certs map[string][]byte) []byte {
	names := make([]string, 0, len(certs))
	for n := range certs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		c := certs[n]
		b.Write(c)
		if len(c) > 0 && c[len(c)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// cleanName turns a tar member name ("./usr/bin/x", "/etc/") into a
// relative path without a trailing slash.
func cleanName(name string) string {
	return strings.Trim(path.Clean("/"+name), "/")
}

// writeRootTar streams the generated files, then every package in debs,
// then dpkg's database of them (when controls, the packages' control
// fields in the order of debs, is not nil; members are their md5sums and
// conffiles, see dpkgDatabaseWith) into w as one tar. The builder
// keeps the first entry for a path, so the generated files win over any a
// package ships.
func writeRootTar(ctx context.Context, w io.Writer, debs []string, controls []map[string]string, members []map[string][]byte, extra []entry, progress func(item string, i int)) error {
	tb := debian.NewTarBuilder(w)
	tb.Modes = maintainerModes
	add := func(e entry) error {
		var err error
		switch {
		case e.dir:
			err = tb.AddDir(e.name, e.mode)
		case e.link != "":
			err = tb.AddSymlink(e.name, e.link)
		default:
			err = tb.AddFile(e.name, e.mode, e.data)
		}
		if err != nil {
			return fmt.Errorf("add /%s: %w", e.name, err)
		}
		return nil
	}
	for _, e := range extra {
		if err := add(e); err != nil {
			return err
		}
	}
	lists := make([][]string, len(debs))
	for i, d := range debs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if progress != nil {
			progress(path.Base(d), i)
		}
		list, err := tb.AddDebFiles(d)
		if err != nil {
			return fmt.Errorf("unpack %s: %w", path.Base(d), err)
		}
		lists[i] = list
	}
	if controls != nil {
		db, err := dpkgDatabaseWith(controls, lists, members)
		if err != nil {
			return err
		}
		for _, e := range db {
			if err := add(e); err != nil {
				return err
			}
		}
	}
	return tb.Close()
}

// errConvertStopped tells a tar producer that nobody reads its stream.
var errConvertStopped = errors.New("ext4 conversion stopped")

// TarToExt4 runs produce in a goroutine writing a tar stream, and turns
// that stream into a read-only ext4 image at out.
func TarToExt4(out string, produce func(w io.Writer) error) (err error) {
	f, err := os.OpenFile(out, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", out, cerr)
		}
	}()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		perr := produce(pw)
		pw.CloseWithError(perr)
		done <- perr
	}()
	cerr := tar2ext4.ConvertTarToExt4(pr, f, tar2ext4.InlineData)
	// Unblock the producer if the converter stopped early.
	pr.CloseWithError(errConvertStopped)
	perr := <-done
	if perr != nil && !errors.Is(perr, errConvertStopped) {
		return perr
	}
	if cerr != nil {
		return fmt.Errorf("make ext4 image %s: %w", out, cerr)
	}
	return nil
}
