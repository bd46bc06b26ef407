package devcontainer

// GuestWorkspace is where the repository is in every session, whatever
// the file's workspaceFolder says.
const GuestWorkspace = "/workspace"

// Config is what a devcontainer.json asks for, checked. Paths are
// slash-separated and inside the repository; nothing here has been pulled,
// built or run.
type Config struct {
	// File is the file's path inside the repository ("a/b.json").
	File string
	// Name is the display name the file gives, if any.
	Name string

	// Image is the image to run, as written ("golang:1.23"). Empty when the
	// file builds one (Build) or names neither: then the session runs on
	// Sandbar's default image, which is the caller's choice to make.
	Image string
	// Build is set when the file builds its image from a Dockerfile.
	Build *Build

	// Features in the file's order. OrderFeatures gives the install order.
	Features []Feature
	// OverrideFeatureInstallOrder is the file's overrideFeatureInstallOrder:
	// feature ids (without version) to install first, in this order.
	OverrideFeatureInstallOrder []string

	// ContainerEnv is set for every process of the environment, the
	// features' install scripts and lifecycle commands included.
	ContainerEnv []EnvVar
	// RemoteEnv is set for the agent and the lifecycle commands.
	RemoteEnv []EnvVar

	OnCreateCommand      Command
	UpdateContentCommand Command
	PostCreateCommand    Command
	PostStartCommand     Command

	// ForwardPorts are ports of the session to publish, in the file's order.
	ForwardPorts []Port

	RemoteUser    string
	ContainerUser string

	// WorkspaceFolder is the cleaned absolute path the file asks for, ""
	// when it asks for none. The repository stays at GuestWorkspace; see
	// WorkspaceLink.
	WorkspaceFolder string

	// HostRequirements are the file's minimums, used as the session's
	// default limits.
	HostRequirements HostRequirements

	// Mounts are volume and tmpfs mounts (binds are refused).
	Mounts []Mount

	// Unsupported names every field of the file Sandbar does not act on,
	// sorted ("runArgs", "build.cacheFrom", "mounts[0].consistency"), for
	// the environment's log. Other tools' customizations (the spec's
	// "customizations.vscode" and alike) are not listed: the spec gives each
	// tool its own namespace there and every tool reads only its own.
	Unsupported []string
	// Notes are things the environment's log should say about the file
	// that are not errors: a ${localEnv:...} that is empty in a session, an
	// unknown ${...} variable left as written. Each starts with FILE:LINE:COL.
	Notes []string
}

// Build is the file's build section. Dockerfile and Context are resolved
// against the devcontainer.json's folder and are inside the repository.
type Build struct {
	Dockerfile string   // "path/Dockerfile", inside the repository
	Context    string   // "." for the repository root
	Args       []EnvVar // build arguments, in the file's order
	Target     string   // the stage to build, "" for the last
}

// EnvVar is one NAME=value pair. A value may hold ${containerEnv:NAME}
// references, which only the guest's environment can fill in; see
// ExpandContainerEnv.
type EnvVar struct {
	Name, Value string
	// Unset is set for a remoteEnv name the file sets to null, which the
	// spec reads as "remove it".
	Unset bool
}

// Port is one forwardPorts entry: a port of the session ("3000"), or of
// another host the session reaches ("db:5432"), where Host is set.
type Port struct {
	Host string
	Port int
}

// HostRequirements are minimums for the machine. Zero means not given.
type HostRequirements struct {
	CPUs        int
	MemoryBytes int64
}

// MountType is how a mount is backed.
type MountType string

const (
	// MountVolume is a named (or anonymous, Source "") disk of the
	// session's own, kept per project by the caller.
	MountVolume MountType = "volume"
	// MountTmpfs is memory, empty at every start.
	MountTmpfs MountType = "tmpfs"
)

// Mount is one volume or tmpfs mount.
type Mount struct {
	Type     MountType
	Source   string // the volume's name; "" for tmpfs or an anonymous volume
	Target   string // cleaned absolute path in the guest
	ReadOnly bool
}

// WorkspaceLink is the path where the guest should have a link to
// GuestWorkspace, or "" when the file asks for no other folder.
func (c *Config) WorkspaceLink() string {
	if c.WorkspaceFolder == "" || c.WorkspaceFolder == GuestWorkspace {
		return ""
	}
	return c.WorkspaceFolder
}

// ContainerWorkspaceFolder is the folder the lifecycle commands run in and
// ${containerWorkspaceFolder} names: the file's workspaceFolder, or
// GuestWorkspace.
func (c *Config) ContainerWorkspaceFolder() string {
	if c.WorkspaceFolder == "" {
		return GuestWorkspace
	}
	return c.WorkspaceFolder
}
