package policy

import (
	"fmt"
	"strings"
)

// defaultAllowlist is the one list of what a session reaches without
// being told: the model's API and the package registries and code hosts
// an agent needs to build software. It is written in the rule syntax so a
// person can copy any of it into their own settings. Every entry is HTTPS
// (TCP 443) except the Debian and Ubuntu archives, which apt reaches over
// plain HTTP as well (it checks the packages' signatures itself).
//
// The registries and code hosts are read-only: every one of them takes a
// push or a publish made with a token the agent brings along, so the
// repository could leave by them. Their clients read with GET and HEAD,
// git fetches with POST .../git-upload-pack, npm's audit POSTs a list of
// packages to its security endpoints, and git-lfs asks for downloads with
// a POST to .../info/lfs/objects/batch; see IsRead in app/net/broker. A
// person who wants writes says so ("allow github.com write"), or brokers
// a token for the host ("secrets set --host github.com").
const defaultAllowlist = `
# The model API.
allow api.anthropic.com

# npm.
allow registry.npmjs.org read
allow registry.yarnpkg.com read

# PyPI.
allow pypi.org read
allow files.pythonhosted.org read

# The Go module proxy and checksum database.
allow proxy.golang.org read
allow sum.golang.org read

# crates.io.
allow crates.io read
allow index.crates.io read
allow static.crates.io read

# RubyGems.
allow rubygems.org read
allow index.rubygems.org read

# Maven Central.
allow repo.maven.apache.org read
allow repo1.maven.org read

# Debian and Ubuntu archives, over HTTP and HTTPS.
allow deb.debian.org:80 read
allow deb.debian.org:443 read
allow security.debian.org:80 read
allow security.debian.org:443 read
allow archive.ubuntu.com:80 read
allow archive.ubuntu.com:443 read
allow security.ubuntu.com:80 read
allow security.ubuntu.com:443 read
allow ports.ubuntu.com:80 read
allow ports.ubuntu.com:443 read

# GitHub and GitLab, for git over HTTPS.
allow github.com read
allow codeload.github.com read
allow objects.githubusercontent.com read
allow raw.githubusercontent.com read
allow gitlab.com read
`

// DefaultText is the default allowlist as the rule syntax writes it, with
// its comments: what a person reads, and may copy into their own rules.
func DefaultText() string {
	return strings.TrimLeft(defaultAllowlist, "\n")
}

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
