// Package npm names the tarballs of packages in the npm registry.
//
// It knows only the registry's URL layout, so the image builder can fetch a
// pinned package version through its verified download cache. It is not an
// npm client: it resolves no versions and reads no package metadata.
package npm

import (
	"fmt"
	"net/url"
	"strings"
)

// DefaultRegistry is the public npm registry.
const DefaultRegistry = "https://registry.npmjs.org"

// TarballURL returns the URL of the tarball of package name at version in
// registry (DefaultRegistry when empty). A scoped name such as
// "@scope/pkg" keeps its scope in the path and drops it from the file name,
// as the registry does: <registry>/@scope/pkg/-/pkg-<version>.tgz.
func TarballURL(registry, name, version string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	if version == "" || strings.ContainsAny(version, "/ \\?#") {
		return "", fmt.Errorf("npm package %s: invalid version %q: pin an exact version such as 1.2.3", name, version)
	}
	if registry == "" {
		registry = DefaultRegistry
	}
	base := name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		base = name[i+1:]
	}
	return strings.TrimRight(registry, "/") + "/" + name + "/-/" + base + "-" + url.PathEscape(version) + ".tgz", nil
}

// ValidateName reports whether name is a plausible npm package name:
// lower case, optionally scoped as @scope/pkg, with no path tricks.
func ValidateName(name string) error {
	bad := func() error {
		return fmt.Errorf("invalid npm package name %q: use a name like pkg or @scope/pkg", name)
	}
	parts := []string{name}
	if strings.HasPrefix(name, "@") {
		scope, pkg, ok := strings.Cut(name[1:], "/")
		if !ok {
			return bad()
		}
		parts = []string{scope, pkg}
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || len(p) > 214 || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "_") {
			return bad()
		}
		for _, r := range p {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.', r == '_', r == '~':
			default:
				return bad()
			}
		}
	}
	return nil
}
