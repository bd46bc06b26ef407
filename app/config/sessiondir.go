package config

import (
	"path/filepath"
)

// Names of the files a data directory holds besides the sessions.
const (
	dbFile      = "sandbar.db"
	sessionsDir = "sessions"
)

// SessionDir is the directory session id owns, with the name of every
// file in it.
func (p Paths) SessionDir(id string) SessionDir {
	return SessionDir{dir: filepath.Join(p.Sessions(), id)}
}

// SessionDir is one session's directory, sessions/<id>/. Everything the
// session owns on the host is in it, so listing it shows the session and
// deleting it removes the session; this type is the one place its file
// names are written down (as lima's pkg/limatype/filenames is for an
// instance). The session manager (app/session) writes and reads them;
// Inspect there rebuilds what is known of a session from them.
//
// The VM's own files (its pid file and sockets) are its backend's: they
// are in VMDir under names vm/qemu and vm/vz choose.
type SessionDir struct{ dir string }

// Names of the files of a session directory.
const (
	agentLogFile    = "agent.log"
	transcriptFile  = "transcript.jsonl"
	consoleFile     = "console.log"
	vmStateFile     = "vm.state"
	vmPortsFile     = "vm-ports.json"
	scratchFile     = "scratch.img"
	baseCommitFile  = "base-commit"
	baseDiskFile    = "base-disk"
	savedAtFile     = "saved-at"
	saveErrorFile   = "save-error"
	saveSpoolFile   = "save.partial"
	networkRepoFile = "network.repo"
	environmentFile = "environment.json"
	rootImageFile   = "root-image.json"
	preparedFile    = "prepared-env.json"
	metaFile        = "session.json"
	exportDir       = "export"
	legacyWorkspace = "workspace"
	// exportTempPrefix starts the folders workspace.Mirror.Export writes
	// beside the export before it swaps them in.
	exportTempPrefix = ".export-"
)

// NewSessionDir is the session directory at path (a test's, or one a
// caller found by listing Paths.Sessions).
func NewSessionDir(path string) SessionDir { return SessionDir{dir: path} }

// Path is the directory itself.
func (d SessionDir) Path() string { return d.dir }

// String is the directory's path.
func (d SessionDir) String() string { return d.dir }

// ID is the session's id: the directory's name.
func (d SessionDir) ID() string { return filepath.Base(d.dir) }

// AgentLog holds every line of the session's log (the agent's output and
// Sandbar's own lines), bounded; the store keeps only a window of them.
func (d SessionDir) AgentLog() string { return d.join(agentLogFile) }

// Transcript is a Claude Code session's conversation, one JSON entry a
// line.
func (d SessionDir) Transcript() string { return d.join(transcriptFile) }

// VMDir is the directory the session's VM owns: its console log, its
// scratch disk, and the backend's pid file and sockets.
func (d SessionDir) VMDir() string { return d.dir }

// Console is the VM's console output.
func (d SessionDir) Console() string { return filepath.Join(d.VMDir(), consoleFile) }

// Scratch is the VM's writable disk: the root overlay's upper layer and
// the workspace's copy-on-write layer, kept across restarts.
func (d SessionDir) Scratch() string { return filepath.Join(d.VMDir(), scratchFile) }

// VMState is the saved state (RAM and devices) of a suspended session's
// VM, which a resume loads and then deletes: the session's disks move on
// from it once the guest runs.
func (d SessionDir) VMState() string { return filepath.Join(d.VMDir(), vmStateFile) }

// VMPorts is the listening ports a suspended session's guest last
// reported: the guest reports a change only, so its resumed servers are
// published again from this.
func (d SessionDir) VMPorts() string { return filepath.Join(d.VMDir(), vmPortsFile) }

// BaseCommit holds the commit the session's branch started from.
func (d SessionDir) BaseCommit() string { return d.join(baseCommitFile) }

// BaseDisk holds the path of the project's read-only base disk the
// session's workspace is layered on (under the project's directory, not
// here: sessions at one commit share it).
func (d SessionDir) BaseDisk() string { return d.join(baseDiskFile) }

// SavedAt holds when the session's work was last saved (RFC 3339).
func (d SessionDir) SavedAt() string { return d.join(savedAtFile) }

// SaveError holds why the session's clone may hold work Sandbar has not
// saved; absent when the last save succeeded.
func (d SessionDir) SaveError() string { return d.join(saveErrorFile) }

// SaveSpool holds a save's pack while it comes from the VM, before it is
// imported.
func (d SessionDir) SaveSpool() string { return d.join(saveSpoolFile) }

// Meta records what the database holds of the session that a person
// would miss if the database lost it (its title, project, branch, prompt),
// as JSON: written by the host alone, when the session is created and
// when it is renamed, and read back when the engine adopts a session the
// database lost (session.Heal).
func (d SessionDir) Meta() string { return d.join(metaFile) }

// RootImage records the image whose root the session's agent runs on
// when it is not Sandbar's own (session.RootImage, as JSON).
func (d SessionDir) RootImage() string { return d.join(rootImageFile) }

// PreparedEnv records the prepared environment the session boots on,
// when it has one (session.preparedRecord, as JSON): a restart boots on
// the same disk.
func (d SessionDir) PreparedEnv() string { return d.join(preparedFile) }

// NetworkRepo is the session's copy of its repository's network file,
// taken at start so that the agent cannot change its own rules.
func (d SessionDir) NetworkRepo() string { return d.join(networkRepoFile) }

// Export is the read-only folder of the session's files as last saved,
// for the person's own tools.
// Environment is the session's copy of the environment it was created
// with (the trusted devcontainer.json): a restart runs the same one.
func (d SessionDir) Environment() string { return d.join(environmentFile) }

func (d SessionDir) Export() string { return d.join(exportDir) }

// IsExportTemp reports whether name, an entry of the directory, is a
// folder an export left half-written.
func IsExportTemp(name string) bool {
	return len(name) > len(exportTempPrefix) && name[:len(exportTempPrefix)] == exportTempPrefix
}

// LegacyWorkspace is the clone an older Sandbar shared with the VM; its
// files are the agent's, so nothing on the host runs git there.
func (d SessionDir) LegacyWorkspace() string { return d.join(legacyWorkspace) }

func (d SessionDir) join(name string) string { return filepath.Join(d.dir, name) }
