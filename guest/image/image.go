// Package image builds and caches the guest's boot files: a kernel the
// hypervisors load directly, an initramfs holding only sandbar-init and the
// modules it loads, a read-only root disk (rootfs.ext4) made from Debian
// packages, and a second read-only disk (agent.ext4) holding the coding
// agent, mounted at /opt/agent.
//
// Everything is done in Go, without root and without Linux tools, so a Mac
// builds the same image as Linux. An image lives in
// <images>/<manifest-hash>/, where the hash covers the build's inputs
// (exact package versions and checksums, kernel, modules, agent, init,
// recipe version), so the same inputs are a cache hit and a changed input
// is a new directory. This package does not boot anything and does not
// decide when to rebuild; the CLI and the session manager do.
package image

import (
	"errors"
	"log/slog"
	"time"

	"sandbar/guest/image/debian"
	"sandbar/guest/image/download"
)

// Builder is the version of the build recipe. Bump it whenever a change to
// this package changes what an image contains, so old images are not
// mistaken for new ones.
const Builder = 5

// Suite is the Debian release the root disk and kernel come from.
const Suite = "bookworm"

// DefaultMirror is the Debian archive used when Options.Mirror is empty.
const DefaultMirror = debian.DefaultMirror

// File names inside an image directory.
const (
	KernelFile    = "kernel"
	InitramfsFile = "initramfs"
	RootFSFile    = "rootfs.ext4"
	AgentFile     = "agent.ext4"
	ManifestFile  = "manifest.json"
	// currentFile, directly under the images root, names the newest
	// complete image, for offline use.
	currentFile = "current"
)

// ErrNotBuilt means there is no complete image to boot.
var ErrNotBuilt = errors.New("no guest image yet: run `sandbar image build`")

// ErrOffline means a cold build could not reach the Debian archive.
var ErrOffline = errors.New("cannot reach the Debian archive: connect to the internet and run `sandbar image build` again; nothing was changed")

// Options says what to build and where.
type Options struct {
	// Dir is the images root, e.g. $SANDBAR_HOME/images.
	Dir string
	// Downloads caches and verifies every file fetched; required.
	Downloads *download.Cache
	// Arch is "amd64" or "arm64"; default runtime.GOARCH.
	Arch string
	// Mirror is the Debian archive; default DefaultMirror.
	Mirror string
	// Init is the static sandbar-init binary for Arch; required.
	Init []byte
	// Packages are the Debian packages of the root disk, the archive's
	// Essential packages and all their dependencies added; default
	// DefaultPackages().
	Packages []string
	// Modules are the kernel modules put in the initramfs, their
	// dependencies added; default kernel.DefaultModules().
	Modules []string
	// Registry is the npm registry the agent comes from; default the
	// public one.
	Registry string
	// Agent is the coding agent put on agent.ext4; default DefaultAgent(Arch).
	Agent AgentSpec
	// Progress, when set, is told about each stage and download. It may
	// be called from several goroutines at once.
	Progress func(Progress)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Progress reports how far a build is.
type Progress struct {
	// Stage is one of "index", "download", "rootfs", "kernel",
	// "initramfs", "agent", "done".
	Stage string
	// Item is the package, URL or file being worked on.
	Item string
	// Done and Total count bytes of the current download.
	Done, Total int64
	// Count of Of packages are fetched.
	Count, Of int
}

// AgentSpec pins the coding agent's npm package.
type AgentSpec struct {
	Package   string // npm name, e.g. @anthropic-ai/claude-code-linux-x64
	Version   string // exact version
	Integrity string // npm dist.integrity (SRI, sha512)
	Binary    string // path of the executable inside the tarball, e.g. package/claude
}

// PackageRef identifies one Debian package exactly.
type PackageRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
}

// KernelRef identifies the Debian kernel package and its release.
type KernelRef struct {
	Package string `json:"package"` // e.g. linux-image-6.1.0-28-amd64
	Version string `json:"version"` // Debian version, e.g. 6.1.119-1
	Release string `json:"release"` // uname -r, e.g. 6.1.0-28-amd64
	SHA256  string `json:"sha256"`
}

// Manifest describes an image: its inputs, which make its Hash, and a few
// facts about the outputs, which do not.
type Manifest struct {
	Hash       string       `json:"hash"`
	Arch       string       `json:"arch"`
	Suite      string       `json:"suite"`
	Kernel     KernelRef    `json:"kernel"`
	Modules    []string     `json:"modules"`
	Packages   []PackageRef `json:"packages"`
	Agent      AgentSpec    `json:"agent"`
	InitSHA256 string       `json:"init_sha256"`
	Builder    int          `json:"builder"`

	// Outputs: not part of Hash.
	Sizes        map[string]int64 `json:"sizes,omitempty"`
	BuiltAt      time.Time        `json:"built_at"`
	BuildSeconds float64          `json:"build_seconds"`
}

// Image is a complete image on disk.
type Image struct {
	Dir       string
	Kernel    string
	Initramfs string
	RootFS    string
	AgentDisk string
	Manifest  Manifest
}

// DefaultPackages is the root disk's package set: what a coding agent
// expects of a developer's shell, and no more. Their dependencies are
// added by the resolver, and Build adds the Essential ones.
func DefaultPackages() []string {
	return []string{
		// The base a shell session needs.
		"base-files", "bash", "dash", "coreutils", "debianutils", "diffutils",
		"findutils", "grep", "sed", "mawk", "tar", "gzip", "xz-utils",
		"libc-bin", "ncurses-base", "netbase", "procps", "less", "util-linux",
		// What the agent and its tools call.
		"git", "ca-certificates", "curl", "openssh-client", "ripgrep", "make",
		"python3", "nodejs", "patch", "file",
		// sandbar-init formats the scratch disk with mkfs.ext4 from the root.
		"e2fsprogs",
		// So the agent can build, and install what the project needs:
		// `sudo apt-get install golang`, from the suite the image comes from.
		"sudo", "apt", "debian-archive-keyring", "build-essential",
		// A devcontainer.json's build.dockerfile is built in a VM, never on
		// the host (app/env/dockerbuild): buildah as root, with chroot
		// isolation and vfs storage, which need no runtime, no overlay of
		// an overlay and no user namespaces. Its Depends bring the
		// containers' configuration (registries, policy, storage).
		"buildah",
	}
}

// Pinned agent releases; update them together with their integrity, from
// `npm view <package> version dist.integrity`.
const (
	agentVersion        = "2.1.330"
	agentIntegrityAMD64 = "sha512-9Gn+V7DtJ8M1nztP9CeDVl9g3RtrepI7rOFTyPRRnZe8D6zebIHKmC7OvBauucuAP0X0k85SDN/LPVZyjsGezQ=="
	agentIntegrityARM64 = "sha512-V4yanAY5EA5UpwwRPtjSfqDbNqAlUJeVn3NYZw2AgmRHjdpSsLtHAzbxRXfkAnbjwTXzE0uedjQxUY02ARPcsA=="
)

// DefaultAgent returns the pinned Claude Code native binary for arch
// ("amd64" or "arm64"); the zero AgentSpec for any other arch.
func DefaultAgent(arch string) AgentSpec {
	switch arch {
	case "amd64":
		return AgentSpec{"@anthropic-ai/claude-code-linux-x64", agentVersion, agentIntegrityAMD64, "package/claude"}
	case "arm64":
		return AgentSpec{"@anthropic-ai/claude-code-linux-arm64", agentVersion, agentIntegrityARM64, "package/claude"}
	}
	return AgentSpec{}
}
