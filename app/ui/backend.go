// Package ui is Sandbar's windows and tray menu, in Fyne. It drives a
// Backend (the session manager) and never reaches into a VM. It must not
// import fyne.io/fyne/v2/app: main makes the app and hands it in, so the
// tests run headless with Fyne's test driver (fyne.io/fyne/v2/test).
package ui

import (
	"context"
	"io"
	"time"

	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/sandbox"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Backend is what the UI needs of the session manager; *session.Manager
// implements it, and so does *engine.Client (a window beside another
// process's engine). All methods are safe for concurrent use; the UI calls
// the slow ones (Start's validation, Stop, Merge, Remove, Exec) off the
// UI goroutine and posts results back with fyne.Do.
type Backend interface {
	Subscribe(ctx context.Context, session string) <-chan session.Event

	AddProject(ctx context.Context, path string) (store.Project, string, error)
	Projects(ctx context.Context) ([]store.Project, error)
	Project(ctx context.Context, id int64) (store.Project, error)
	RemoveProject(ctx context.Context, ref string) error

	List(ctx context.Context) ([]store.Session, error)
	Get(ctx context.Context, id string) (store.Session, error)
	Start(ctx context.Context, o session.Options) (store.Session, error)
	Stop(ctx context.Context, id string) (store.Session, error)
	Restart(ctx context.Context, id string) (store.Session, error)
	Remove(ctx context.Context, id string, force bool) error
	Merge(ctx context.Context, id string, force bool) (workspace.MergeResult, error)
	Chat(ctx context.Context, id, text string) error
	Exec(ctx context.Context, id string, req sandbox.ExecRequest, stdout, stderr io.Writer) (sandbox.ExecResult, error)

	Logs(ctx context.Context, id string, afterSeq int64, limit int) ([]store.LogLine, error)
	Transcript(ctx context.Context, id string) ([]session.Entry, error)
	Changes(ctx context.Context, id string) (workspace.Changes, error)
	// FileDiff is one changed file's diff, made by git inside the
	// session's VM while it runs (else from its saved work): text from
	// the agent's sandbox, to show and nothing more.
	FileDiff(ctx context.Context, id string, f workspace.FileChange) (string, error)
	// Export writes a read-only copy of the session's files, as last
	// saved (a running session is saved first), into a folder Sandbar
	// owns, and says where and as of when.
	Export(ctx context.Context, id string) (dir string, when time.Time, err error)

	Budget(ctx context.Context) (session.Budget, error)
	HostCPUs() int

	// The session network. NetAttempts, NetSummary, NetworkRules and
	// ProjectSecrets read the store; the rest reach the running sessions
	// (through the engine for a Client) and take effect at once.
	NetAttempts(ctx context.Context, ref string) ([]store.NetAttempt, error)
	NetSummary(ctx context.Context, ref string) (session.NetSummary, error)
	AddNetRule(ctx context.Context, ref string, scope session.NetScope, action, target string) (policy.Rule, error)
	NetworkRules(ctx context.Context, scope session.NetScope, ref string) (string, error)
	// SetNetworkRules refuses a text that does not parse, saying which
	// line and what to write, and changes nothing then.
	SetNetworkRules(ctx context.Context, scope session.NetScope, ref, text string, projectID int64) error
	Ports(ctx context.Context, ref string) ([]netstack.Port, error)
	PublishPort(ctx context.Context, ref string, guest, host uint16) (netstack.Port, error)
	UnpublishPort(ctx context.Context, ref string, guest uint16) error
	ProjectSecrets(ctx context.Context, projectID int64) ([]string, error)
	// SetProjectSecrets refuses a name that is not a recorded secret,
	// and changes nothing then.
	SetProjectSecrets(ctx context.Context, projectRef string, names []string) error
}

var _ Backend = (*session.Manager)(nil)
