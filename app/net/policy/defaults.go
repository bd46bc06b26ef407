package policy

import "fmt"

// defaultAllowlist is the one list of what a session reaches without
// being told: the model's API and the package registries and code hosts
// an agent needs to build software. It is written in the rule syntax so a
// person can copy any of it into their own settings. Every entry is HTTPS
// (TCP 443) except the Debian and Ubuntu archives, which apt reaches over
// plain HTTP as well (it checks the packages' signatures itself).
const defaultAllowlist = `
# The model API.
allow api.anthropic.com

# npm.
allow registry.npmjs.org
allow registry.yarnpkg.com

# PyPI.
allow pypi.org
allow files.pythonhosted.org

# The Go module proxy and checksum database.
allow proxy.golang.org
allow sum.golang.org

# crates.io.
allow crates.io
allow index.crates.io
allow static.crates.io

# RubyGems.
allow rubygems.org
allow index.rubygems.org

# Maven Central.
allow repo.maven.apache.org
allow repo1.maven.org

# Debian and Ubuntu archives, over HTTP and HTTPS.
allow deb.debian.org:80
allow deb.debian.org:443
allow security.debian.org:80
allow security.debian.org:443
allow archive.ubuntu.com:80
allow archive.ubuntu.com:443
allow security.ubuntu.com:80
allow security.ubuntu.com:443
allow ports.ubuntu.com:80
allow ports.ubuntu.com:443

# GitHub and GitLab, for git over HTTPS.
allow github.com
allow codeload.github.com
allow objects.githubusercontent.com
allow raw.githubusercontent.com
allow gitlab.com
`

// Defaults returns the default allowlist (see defaultAllowlist), a fresh
// copy each call, every rule's Source SourceDefault. Compose adds it
// unless Sandbar's or the project's settings say "defaults off".
func Defaults() []Rule {
	f, err := Parse([]byte(defaultAllowlist), SourceDefault)
	if err != nil {
		// The list is a constant and TestDefaults reads it.
		panic(fmt.Sprintf("policy: the default allowlist does not parse: %v", err))
	}
	return f.Rules
}
