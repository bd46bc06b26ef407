package debian

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Package is one binary package as the archive's Packages index lists it.
type Package struct {
	Name         string
	Version      string
	Architecture string // "amd64", "arm64" or "all"
	// Filename is the .deb's path below the mirror, e.g.
	// "pool/main/b/bash/bash_5.2.15-2+b7_amd64.deb".
	Filename string
	SHA256   string // hex
	// Size is the .deb's size in bytes; InstalledSize what it takes once
	// unpacked, in bytes (Debian gives it in KiB).
	Size, InstalledSize int64
	// Depends, PreDepends and Provides are the raw fields, e.g.
	// "libc6 (>= 2.34), libtinfo6 (>= 6)".
	Depends, PreDepends, Provides string
	Priority                      string // "required", "important", "standard", "optional"
	Essential                     string // "yes" or ""
}

// Index is the set of packages one Debian suite offers for one
// architecture, with the virtual names their Provides declare.
type Index struct {
	where     string
	packages  map[string]Package
	providers map[string][]provided
}

// provided is one package's Provides entry for a virtual name.
type provided struct {
	pkg     string
	version string // empty when unversioned
}

// NewIndex indexes pkgs. where names the archive in error messages, e.g.
// "bookworm/main for amd64". When a name is listed twice, the higher
// version wins.
func NewIndex(where string, pkgs []Package) *Index {
	ix := &Index{where: where, packages: make(map[string]Package, len(pkgs)), providers: make(map[string][]provided)}
	for _, p := range pkgs {
		if old, ok := ix.packages[p.Name]; ok && CompareVersions(old.Version, p.Version) >= 0 {
			continue
		}
		ix.packages[p.Name] = p
	}
	for _, name := range slices.Sorted(maps.Keys(ix.packages)) {
		p := ix.packages[name]
		for _, group := range parseDeps(p.Provides) {
			for _, d := range group {
				v := ""
				if d.op == "=" {
					v = d.version
				}
				ix.providers[d.name] = append(ix.providers[d.name], provided{pkg: p.Name, version: v})
			}
		}
	}
	return ix
}

// Lookup returns the real (not virtual) package called name.
func (ix *Index) Lookup(name string) (Package, bool) {
	p, ok := ix.packages[name]
	return p, ok
}

// Len is the number of real packages in the index.
func (ix *Index) Len() int { return len(ix.packages) }

// Essential returns the names of the packages marked Essential, sorted.
// Debian packages do not declare dependencies on them, so a root file
// system built from Resolve's result should ask for them too.
func (ix *Index) Essential() []string {
	var out []string
	for name, p := range ix.packages {
		if p.Essential == "yes" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ParsePackages reads a Packages index (deb822 stanzas, uncompressed).
func ParsePackages(r io.Reader) ([]Package, error) {
	var out []Package
	err := readStanzas(r, func(f map[string]string) error {
		p := Package{
			Name:         f["Package"],
			Version:      f["Version"],
			Architecture: f["Architecture"],
			Filename:     f["Filename"],
			SHA256:       f["SHA256"],
			Depends:      f["Depends"],
			PreDepends:   f["Pre-Depends"],
			Provides:     f["Provides"],
			Priority:     f["Priority"],
			Essential:    f["Essential"],
		}
		if p.Name == "" || p.Version == "" {
			return fmt.Errorf("stanza without Package or Version (near %q)", p.Name)
		}
		var err error
		if s := f["Size"]; s != "" {
			if p.Size, err = strconv.ParseInt(s, 10, 64); err != nil {
				return fmt.Errorf("package %s: bad Size %q", p.Name, s)
			}
		}
		if s := f["Installed-Size"]; s != "" {
			kib, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("package %s: bad Installed-Size %q", p.Name, s)
			}
			p.InstalledSize = kib * 1024
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse Packages index: %w", err)
	}
	return out, nil
}

// readStanzas calls fn with the fields of each deb822 stanza in r.
// Continuation lines are joined to their field with "\n"; a multi-line
// field's first line may be empty (as in Release's SHA256).
func readStanzas(r io.Reader, fn func(map[string]string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	fields := map[string]string{}
	last := ""
	flush := func() error {
		if len(fields) == 0 {
			return nil
		}
		err := fn(fields)
		fields = map[string]string{}
		last = ""
		return err
	}
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case strings.TrimSpace(text) == "":
			if err := flush(); err != nil {
				return err
			}
		case text[0] == ' ' || text[0] == '\t':
			if last == "" {
				return fmt.Errorf("line %d: continuation line without a field", line)
			}
			fields[last] += "\n" + strings.TrimSpace(text)
		case text[0] == '#':
			// Comments are allowed in deb822 files.
		default:
			k, v, ok := strings.Cut(text, ":")
			if !ok {
				return fmt.Errorf("line %d: %q is not a field", line, text)
			}
			last = k
			fields[k] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

// dep is one alternative of a dependency: a name, and an optional
// version relation.
type dep struct {
	name    string
	op      string
	version string
}

func (d dep) String() string {
	if d.op == "" {
		return d.name
	}
	return fmt.Sprintf("%s (%s %s)", d.name, d.op, d.version)
}

// parseDeps parses a Depends-like field into groups of alternatives.
// Architecture qualifiers (":any", ":native") are dropped; so are
// architecture lists and build profiles, which binary indexes do not carry.
func parseDeps(field string) [][]dep {
	var groups [][]dep
	for _, g := range strings.Split(field, ",") {
		var alts []dep
		for _, a := range strings.Split(g, "|") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			var d dep
			rest := ""
			if i := strings.IndexAny(a, " \t([<"); i >= 0 {
				d.name, rest = a[:i], strings.TrimSpace(a[i:])
			} else {
				d.name = a
			}
			d.name, _, _ = strings.Cut(d.name, ":")
			if rel, ok := strings.CutPrefix(rest, "("); ok {
				rel, _, _ = strings.Cut(rel, ")")
				rel = strings.TrimSpace(rel)
				n := strings.IndexFunc(rel, func(r rune) bool { return !strings.ContainsRune("<>=", r) })
				if n > 0 {
					d.op, d.version = rel[:n], strings.TrimSpace(rel[n:])
				}
			}
			alts = append(alts, d)
		}
		if len(alts) > 0 {
			groups = append(groups, alts)
		}
	}
	return groups
}
