package workspace

import (
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// exportNames is how the filesystem an export is written to compares
// names. Linux's compare bytes. macOS's APFS (and HFS+) ignores case and
// normalises Unicode: there "README", "readme" and a name in NFC or NFD are
// one name, so one of them is all the export can hold, and a symlink's
// target finds whichever is there. exportFoldsNames (per platform) says
// which the host has; tests run both here.
type exportNames struct {
	fold  bool
	caser cases.Caser
}

func newExportNames(fold bool) exportNames {
	return exportNames{fold: fold, caser: cases.Fold()}
}

// key is the name c as the filesystem compares it: c itself, or folded
// (Unicode case folding, then NFD, on both sides of the folding, as APFS
// compares).
func (n exportNames) key(c string) string {
	if !n.fold {
		return c
	}
	return norm.NFD.String(n.caser.String(norm.NFD.String(c)))
}

// pathKey is key applied to each part of a slash-separated path.
func (n exportNames) pathKey(p string) string {
	if !n.fold {
		return p
	}
	parts := strings.Split(p, "/")
	for i, c := range parts {
		parts[i] = n.key(c)
	}
	return strings.Join(parts, "/")
}

// maxNameBytes is the longest name of one path part that Linux's and
// macOS's filesystems hold, and maxLinkTarget the longest symlink
// target both take (macOS's PATH_MAX).
const (
	maxNameBytes  = 255
	maxLinkTarget = 1023
)

// unholdable says why this filesystem cannot hold the path name, "" when
// it can: checked before anything is written, so that what the export
// holds is what was planned (a symlink judged on a tree that then lacked
// one of its entries could lead elsewhere).
func (n exportNames) unholdable(name string) string {
	for _, c := range strings.Split(name, "/") {
		if len(c) > maxNameBytes {
			return "a name longer than this system holds"
		}
		if strings.IndexByte(c, 0) >= 0 {
			return "a name with a NUL byte"
		}
		if n.fold && !utf8.ValidString(c) {
			return "a name that is not UTF-8, which this system's filesystem refuses"
		}
	}
	return ""
}

// exportClaims remembers which spelling of each name the export holds, so
// that a second entry whose name is the same one on this filesystem is
// left out rather than written over, or into, the first.
type exportClaims struct {
	names exportNames
	// spelled: every path held (folders included), by key, as spelled
	// by the entry that claimed it.
	spelled map[string]string
	// leaves: paths held by a file or symlink, by key.
	leaves map[string]bool
}

func newExportClaims(names exportNames) *exportClaims {
	return &exportClaims{names: names, spelled: map[string]string{}, leaves: map[string]bool{}}
}

// claim takes name (and, as folders, its parents) for one entry, or says
// why not: a name the export holds already, or one that is the same name
// as another on this filesystem, or a path through a file.
func (c *exportClaims) claim(name string, leaf bool) string {
	parts := strings.Split(name, "/")
	var keys []string
	for i := range parts {
		spelled := strings.Join(parts[:i+1], "/")
		k := c.names.pathKey(spelled)
		keys = append(keys, k)
		if s, ok := c.spelled[k]; ok && s != spelled {
			return "the same name on this system as " + quote(s) + " (names that differ only in case or Unicode form are one here)"
		}
		if c.leaves[k] {
			return "a path through, or the same as, the file " + quote(c.spelled[k])
		}
	}
	k := keys[len(keys)-1]
	if _, ok := c.spelled[k]; ok && leaf {
		return "the same path as a folder already there"
	}
	for i, k := range keys {
		c.spelled[k] = strings.Join(parts[:i+1], "/")
	}
	if leaf {
		c.leaves[k] = true
	}
	return ""
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// parentKey is the key of the folder holding the path key k ("" for the
// root).
func parentKey(k string) string {
	d := path.Dir(k)
	if d == "." {
		return ""
	}
	return d
}
