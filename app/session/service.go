package session

import (
	"context"
	"errors"
	"io"
	"time"

	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Service is everything a window, the tray or a CLI command may ask of
// the sessions of one data directory. The engine's own *Manager
// implements it, and so does the engine client (app/engine), method by
// method: a new operation is added here, to the engine's table and to the
// client, and the compiler holds each of them to it. One conformance test
// runs the same scenario through both.
//
// All methods are safe for concurrent use. The slow ones (Start, Stop,
// Merge, Remove, Exec) are called off any UI goroutine.
type Service interface {
	// Subscribe returns events of every session (or of one, by id) until
	// ctx is done.
	Subscribe(ctx context.Context, session string) <-chan Event

	AddProject(ctx context.Context, path string) (store.Project, string, error)
	Projects(ctx context.Context) ([]store.Project, error)
	Project(ctx context.Context, id int64) (store.Project, error)
	// FindProject finds a project by id, name or path.
	FindProject(ctx context.Context, ref string) (store.Project, error)
	RemoveProject(ctx context.Context, ref string) error
	// Branches lists the local branches of a project's repository, and
	// the one checked out there: what a session may start from.
	Branches(ctx context.Context, projectRef string) (workspace.Branches, error)

	List(ctx context.Context) ([]store.Session, error)
	Get(ctx context.Context, id string) (store.Session, error)
	Start(ctx context.Context, o Options) (store.Session, error)
	Stop(ctx context.Context, id string) (store.Session, error)
	Restart(ctx context.Context, id string) (store.Session, error)
	// RestartFromSaved restarts a session whose disk is gone from its
	// last saved work (a new clone), never from where it first started;
	// Restart refuses such a session with ErrScratchGone.
	RestartFromSaved(ctx context.Context, id string) (store.Session, error)
	// Resume brings a suspended session back from its saved VM state
	// (StateSuspended), or runs a session whose VM paused on a full disk
	// again at once (it also resumes by itself once there is room); one
	// neither suspended nor paused is refused with ErrState.
	Resume(ctx context.Context, id string) (store.Session, error)
	// Suspend saves a running session's VM to its directory and ends it
	// (StateSuspended); Resume brings it back with its processes alive.
	Suspend(ctx context.Context, id string) (store.Session, error)
	// Wait blocks until the session has ended (or ctx is done).
	Wait(ctx context.Context, id string) (store.Session, error)
	// Remove moves a session to the trash (its VM stopped first).
	Remove(ctx context.Context, id string, force bool) error
	// Rename gives a session a new title ("" makes one from its prompt
	// again), refusing one longer than MaxTitle.
	Rename(ctx context.Context, id, title string) (store.Session, error)
	// Merge creates the session's branch in its repository, or with
	// o.Into merges into the repository's current branch; see
	// MergeOptions. Nothing to merge is refused
	// (workspace.ErrNothingToMerge).
	Merge(ctx context.Context, id string, o MergeOptions) (workspace.MergeResult, error)
	// MergeTarget says what the merge actions would do, to name and
	// enable them; it changes nothing.
	MergeTarget(ctx context.Context, id string) (MergeTarget, error)
	// Trash lists the sessions in the trash; Restore brings one back as
	// it was; EmptyTrash deletes those named (all when none is) for
	// good, and says how many went. The engine empties what has been in
	// the trash for DefaultTrashKeep.
	Trash(ctx context.Context) ([]Trashed, error)
	Restore(ctx context.Context, id string) (store.Session, error)
	EmptyTrash(ctx context.Context, ids []string) (int, error)
	Chat(ctx context.Context, id, text string) error
	// Interrupt ends the agent's current turn; the session runs on and
	// waits for a message (ReasonInterrupted).
	Interrupt(ctx context.Context, id string) error
	// Sync brings the person's current branch into the session's clone
	// as origin/<branch>, then merges, rebases or asks the agent as mode
	// says; a merge or rebase that stops on conflicts is a result
	// naming them (SyncResult.Conflicted), not an error.
	Sync(ctx context.Context, id string, mode SyncMode) (SyncResult, error)
	// Commit saves a running session's work and commits what it has not
	// committed on its branch (Commit now), the clone in the VM taking
	// the commit too; message "" makes one. See Manager.Commit.
	Commit(ctx context.Context, id, message string) (CommitResult, error)
	Exec(ctx context.Context, id string, req ExecRequest, stdout, stderr io.Writer) (ExecResult, error)
	// Shell starts an interactive command in a running session's VM (by
	// default ShellCommand), on a pseudo-terminal when req.PTY; the
	// caller must Wait for it.
	Shell(ctx context.Context, id string, req ExecRequest, stdout, stderr io.Writer) (Terminal, error)

	Logs(ctx context.Context, id string, afterSeq int64, limit int) ([]store.LogLine, error)
	Transcript(ctx context.Context, id string) ([]Entry, error)
	// AgentLog is the file holding every line of the session's agent
	// log (the store keeps the newest), for a person to open.
	AgentLog(ctx context.Context, id string) (string, error)
	Changes(ctx context.Context, id string) (workspace.Changes, error)
	// DiffStat sums the session's last saved work against its base
	// (ErrNothingSaved when it saved none), counted once per save.
	DiffStat(ctx context.Context, id string) (workspace.DiffStat, error)
	// FileDiff is one changed file's diff, made by git inside the
	// session's VM while it runs (else from its saved work): text from
	// the agent's sandbox, to show and nothing more.
	FileDiff(ctx context.Context, id string, f workspace.FileChange) (string, error)
	// Export writes a read-only copy of the session's files, as last
	// saved (a running session is saved first), into a folder Sandbar
	// owns, and says where and as of when.
	Export(ctx context.Context, id string) (dir string, when time.Time, err error)

	Budget(ctx context.Context) (Budget, error)
	HostCPUs() int
	// DiskUsage is, per session id, the bytes removing the session would
	// free.
	DiskUsage(ctx context.Context) (map[string]int64, error)

	// The session network. NetAttempts, NetSummary, NetworkRules and
	// ProjectSecrets read the store; the rest reach the running sessions
	// and take effect at once.
	NetAttempts(ctx context.Context, ref string) ([]store.NetAttempt, error)
	NetSummary(ctx context.Context, ref string) (NetSummary, error)
	AddNetRule(ctx context.Context, ref string, scope NetScope, action, target string) (policy.Rule, error)
	NetworkRules(ctx context.Context, scope NetScope, ref string) (string, error)
	// SetNetworkRules refuses a text that does not parse, saying which
	// line and what to write, and changes nothing then.
	SetNetworkRules(ctx context.Context, scope NetScope, ref, text string, projectID int64) error
	ReloadNetworks(ctx context.Context) error
	Ports(ctx context.Context, ref string) ([]netstack.Port, error)
	PublishPort(ctx context.Context, ref string, guest, host uint16) (netstack.Port, error)
	UnpublishPort(ctx context.Context, ref string, guest uint16) error
	ProjectSecrets(ctx context.Context, projectID int64) ([]string, error)
	// SetProjectSecrets refuses a name that is not a recorded secret,
	// and changes nothing then.
	SetProjectSecrets(ctx context.Context, projectRef string, names []string) error

	// RepoTrust reads a project's repository settings files (network
	// file, include lists, environment) and says whether the person
	// trusted each kind's content; DecideRepoTrust trusts or ignores
	// the content of the kinds whose hash the person was shown. Both
	// read and write the store: a session reads them when it starts.
	RepoTrust(ctx context.Context, projectRef string) (RepoReview, error)
	DecideRepoTrust(ctx context.Context, projectRef, decision string, hashes map[string]string) error
	// ProjectSudo says whether a project's agent user may use sudo
	// inside its VM (the default); SetProjectSudo changes it for the
	// project's sessions' next start.
	ProjectSudo(ctx context.Context, projectID int64) (bool, error)
	// Environment reads a project's environment: its devcontainer.json,
	// trust, image, features and commands (sandbar env).
	Environment(ctx context.Context, projectRef string) (EnvironmentView, error)
	// PrepareEnvironment makes the project's prepared environment for
	// its checked-out commit now (or remakes it, with rebuild): it
	// starts the preparation in the engine, or joins the one running,
	// and returns its state at once; Environment's Prepared follows it.
	PrepareEnvironment(ctx context.Context, projectRef string, rebuild bool) (PreparedView, error)
	// PreparedEnvironments lists the prepared environments on this
	// machine, of every project (Settings → Storage);
	// RemovePreparedEnvironment deletes one, by project and key (or a
	// unique prefix), refusing one a session boots on.
	PreparedEnvironments(ctx context.Context) ([]PreparedEnv, error)
	RemovePreparedEnvironment(ctx context.Context, projectRef, key string) error
	SetProjectSudo(ctx context.Context, projectRef string, on bool) error
	// EnvImages lists the images pulled for project environments
	// (Settings → Storage); RemoveEnvImage deletes one by digest,
	// refusing one a session or a prepared environment boots on.
	EnvImages(ctx context.Context) ([]EnvImage, error)
	RemoveEnvImage(ctx context.Context, digest string) error
}

// ExecRequest and ExecResult are a command run in a session's VM, and its
// outcome: the guest protocol's, named here so that callers (the windows,
// the CLI) need not import the package that speaks it.
type (
	ExecRequest = sandbox.ExecRequest
	ExecResult  = sandbox.ExecResult
)

// The users an Exec may run as (ExecRequest.User): UserAgent, the
// agent's unprivileged user, is the default.
const (
	UserAgent = sandbox.UserAgent
	UserRoot  = sandbox.UserRoot
)

// MaxWinSize bounds a shell's terminal rows and columns.
const MaxWinSize = sandbox.MaxWinSize

// ErrDirty is what a refusal to remove a session whose work is not in its
// repository is once it has crossed from the engine to a client; in the
// engine's process it is a *workspace.DirtyError.
var ErrDirty = errors.New("the workspace has work not in the repository")

var _ Service = (*Manager)(nil)
