package engine

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"time"

	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Client is the sessions of a data directory as a process that is not its
// engine sees them: a CLI command, or a window opened while `sandbar
// serve` or another window runs the sessions. It reads in this process,
// through Local, and asks the engine for everything that touches a VM:
// the changes, diffs and export of a live session come from the engine,
// since only the process that runs a VM can ask it.
//
// Every method says which side answers it; a new one must too (the
// compiler asks for it, since Client implements session.Service without
// embedding anything).
type Client struct {
	// Local answers the reads: the store, the session folders and the
	// saved work of sessions that do not run. It runs nothing: in a
	// process that is not the engine, it has no VM to run.
	Local *session.Manager
	// Engine reaches the engine. main's dialer starts a headless one when
	// none answers, so an engine quitting or dying costs a client a
	// moment of reconnection.
	Engine func(ctx context.Context) (*Remote, error)
	// Logger gets what the client cannot tell its caller (a subscription
	// that lost its engine); nil discards it.
	Logger *slog.Logger
	// KeyringOK checks that this process can reach the keyring; when it
	// can and the engine cannot, the engine hands over (handover.go).
	// Nil: never.
	KeyringOK func(ctx context.Context) error
}

var _ session.Service = (*Client)(nil)

// call runs op in the engine and returns its reply.
func call[Rep, Req any](ctx context.Context, c *Client, op string, req Req) (Rep, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		var zero Rep
		return zero, err
	}
	return unaryCall[Rep](ctx, r, op, req)
}

// live reports whether session ref is live, so that its VM, if it has
// one, belongs to the engine. One whose owner died is the engine's too:
// it marks it interrupted and answers from the saved work.
func (c *Client) live(ctx context.Context, ref string) bool {
	s, err := c.Local.Get(ctx, ref)
	return err == nil && session.Live(s.State)
}

// Reads, answered here.

// Projects lists the projects, here.
func (c *Client) Projects(ctx context.Context) ([]store.Project, error) { return c.Local.Projects(ctx) }

// Project reads a project, here.
func (c *Client) Project(ctx context.Context, id int64) (store.Project, error) {
	return c.Local.Project(ctx, id)
}

// FindProject finds a project by id, name or path, here.
func (c *Client) FindProject(ctx context.Context, ref string) (store.Project, error) {
	return c.Local.FindProject(ctx, ref)
}

// Branches lists a project's branches, here: git reads the person's
// repository, which this process may read as well as the engine.
func (c *Client) Branches(ctx context.Context, projectRef string) (workspace.Branches, error) {
	return c.Local.Branches(ctx, projectRef)
}

// List lists the sessions, here, once the engine has recovered those
// whose owner died and adopted back those the database lost (see
// recovered, session.Manager.Lost).
func (c *Client) List(ctx context.Context) ([]store.Session, error) {
	list, err := c.Local.List(ctx)
	if err == nil && (slices.ContainsFunc(list, session.Orphaned) || c.Local.Lost(ctx)) && c.recovered(ctx) {
		list, err = c.Local.List(ctx)
	}
	return list, err
}

// Get reads a session, here, once the engine has recovered it if its
// owner died.
func (c *Client) Get(ctx context.Context, id string) (store.Session, error) {
	s, err := c.Local.Get(ctx, id)
	if err == nil && session.Orphaned(s) && c.recovered(ctx) {
		s, err = c.Local.Get(ctx, id)
	}
	return s, err
}

// recovered reaches the engine, for a session that is live in the store
// while its owner is gone (the engine died): only the engine recovers such
// a session, and Engine starts one when none runs, which recovers it
// before it answers. It reports whether the engine answered; if it did
// not, the read goes on with what the store says.
func (c *Client) recovered(ctx context.Context) bool {
	if _, err := c.Engine(ctx); err != nil {
		if c.Logger != nil {
			c.Logger.Warn("a session's Sandbar process is gone and no engine answers to recover it", "err", err)
		}
		return false
	}
	return true
}

// Logs reads a session's log lines, here.
func (c *Client) Logs(ctx context.Context, id string, afterSeq int64, limit int) ([]store.LogLine, error) {
	return c.Local.Logs(ctx, id, afterSeq, limit)
}

// Transcript reads a session's transcript, here.
func (c *Client) Transcript(ctx context.Context, id string) ([]session.Entry, error) {
	return c.Local.Transcript(ctx, id)
}

// AgentLog names a session's agent log file, here.
func (c *Client) AgentLog(ctx context.Context, id string) (string, error) {
	return c.Local.AgentLog(ctx, id)
}

// Budget reads what the running sessions take of this machine, here.
func (c *Client) Budget(ctx context.Context) (session.Budget, error) { return c.Local.Budget(ctx) }

// HostCPUs is this machine's, here.
func (c *Client) HostCPUs() int { return c.Local.HostCPUs() }

// DiskUsage measures the session folders, here.
func (c *Client) DiskUsage(ctx context.Context) (map[string]int64, error) {
	return c.Local.DiskUsage(ctx)
}

// NetAttempts reads what a session's VM tried to reach, here.
func (c *Client) NetAttempts(ctx context.Context, ref string) ([]store.NetAttempt, error) {
	return c.Local.NetAttempts(ctx, ref)
}

// NetSummary sums up a session's network, here.
func (c *Client) NetSummary(ctx context.Context, ref string) (session.NetSummary, error) {
	return c.Local.NetSummary(ctx, ref)
}

// NetworkRules reads a scope's rules, here.
func (c *Client) NetworkRules(ctx context.Context, scope session.NetScope, ref string) (string, error) {
	return c.Local.NetworkRules(ctx, scope, ref)
}

// ProjectSecrets reads the secrets a project's sessions get, here.
func (c *Client) ProjectSecrets(ctx context.Context, projectID int64) ([]string, error) {
	return c.Local.ProjectSecrets(ctx, projectID)
}

// ProjectSudo reads whether a project's agent may use sudo, here.
func (c *Client) ProjectSudo(ctx context.Context, projectID int64) (bool, error) {
	return c.Local.ProjectSudo(ctx, projectID)
}

// SetProjectSudo sets whether a project's agent may use sudo, here: a
// setting in the store, which a session reads when its agent starts.
func (c *Client) SetProjectSudo(ctx context.Context, projectRef string, on bool) error {
	return c.Local.SetProjectSudo(ctx, projectRef, on)
}

// SetProjectSecrets chooses the secrets a project's sessions get, here:
// a setting in the store, which a session reads when it starts.
func (c *Client) SetProjectSecrets(ctx context.Context, projectRef string, names []string) error {
	return c.Local.SetProjectSecrets(ctx, projectRef, names)
}

// Environment reads a project's environment, here: the repository's
// files, the store and this machine's image store.
func (c *Client) Environment(ctx context.Context, projectRef string) (session.EnvironmentView, error) {
	return c.Local.Environment(ctx, projectRef)
}

// PrepareEnvironment starts (or joins) the project's environment
// preparation in the engine, which owns the machines.
func (c *Client) PrepareEnvironment(ctx context.Context, projectRef string, rebuild bool) (session.PreparedView, error) {
	rep, err := call[PrepareEnvReply](ctx, c, OpPrepareEnv, PrepareEnvRequest{Project: projectRef, Rebuild: rebuild})
	return rep.Prepared, err
}

// PreparedEnvironments lists the prepared environments, here: they are
// folders on this machine.
func (c *Client) PreparedEnvironments(ctx context.Context) ([]session.PreparedEnv, error) {
	return c.Local.PreparedEnvironments(ctx)
}

// RemovePreparedEnvironment deletes one in the engine, which knows the
// sessions booting on it.
func (c *Client) RemovePreparedEnvironment(ctx context.Context, projectRef, key string) error {
	_, err := call[None](ctx, c, OpRemovePrepared, RemovePreparedRequest{Project: projectRef, Key: key})
	return err
}

// EnvImages lists the pulled images, here: they are folders on this
// machine.
func (c *Client) EnvImages(ctx context.Context) ([]session.EnvImage, error) {
	return c.Local.EnvImages(ctx)
}

// RemoveEnvImage deletes a pulled image, here: the image store locks it
// against a pull in any process, and what boots on it is read from the
// sessions' and prepared environments' folders.
func (c *Client) RemoveEnvImage(ctx context.Context, digest string) error {
	return c.Local.RemoveEnvImage(ctx, digest)
}

// RepoTrust reads a project's repository settings and their trust, here.
func (c *Client) RepoTrust(ctx context.Context, projectRef string) (session.RepoReview, error) {
	return c.Local.RepoTrust(ctx, projectRef)
}

// DecideRepoTrust records the person's decision on a project's
// repository settings, here: the store, which a session reads when it
// starts.
func (c *Client) DecideRepoTrust(ctx context.Context, projectRef, decision string, hashes map[string]string) error {
	return c.Local.DecideRepoTrust(ctx, projectRef, decision, hashes)
}

// A live session's work, from the engine; a stopped one's, here.

// Changes reads a live session's changes through the engine, and a
// stopped one's from its saved work here.
func (c *Client) Changes(ctx context.Context, id string) (workspace.Changes, error) {
	if !c.live(ctx, id) {
		return c.Local.Changes(ctx, id)
	}
	rep, err := call[ChangesReply](ctx, c, OpChanges, SessionRef{ID: id})
	return rep.Changes, err
}

// DiffStat sums a session's saved work here: it reads Sandbar's
// repository of the project and changes nothing.
func (c *Client) DiffStat(ctx context.Context, id string) (workspace.DiffStat, error) {
	return c.Local.DiffStat(ctx, id)
}

// FileDiff is one file's diff, through the engine for a live session.
func (c *Client) FileDiff(ctx context.Context, id string, f workspace.FileChange) (string, error) {
	if !c.live(ctx, id) {
		return c.Local.FileDiff(ctx, id, f)
	}
	rep, err := call[FileDiffReply](ctx, c, OpFileDiff, FileDiffRequest{ID: id, File: f})
	return rep.Diff, err
}

// Export writes a session's read-only export; the engine saves a live
// session's work first.
func (c *Client) Export(ctx context.Context, id string) (string, time.Time, error) {
	if !c.live(ctx, id) {
		return c.Local.Export(ctx, id)
	}
	rep, err := call[ExportReply](ctx, c, OpExport, SessionRef{ID: id})
	return rep.Dir, rep.When, err
}

// Everything else, in the engine.

// AddProject adds a project in the engine, which watches its repository.
func (c *Client) AddProject(ctx context.Context, path string) (store.Project, string, error) {
	rep, err := call[AddProjectReply](ctx, c, OpAddProject, AddProjectRequest{Path: path})
	return rep.Project, rep.Note, err
}

// RemoveProject forgets a project in the engine, which ends its watch.
func (c *Client) RemoveProject(ctx context.Context, ref string) error {
	_, err := call[None](ctx, c, OpRemoveProject, RemoveProjectRequest{Ref: ref})
	return err
}

// Start starts a session in the engine; one that cannot reach the
// keyring hands over first (handover.go).
func (c *Client) Start(ctx context.Context, o session.Options) (store.Session, error) {
	rep, err := withKeyring(ctx, c, func() (SessionReply, error) {
		return call[SessionReply](ctx, c, OpStart, StartRequest{Options: o})
	})
	return rep.Session, err
}

// Stop stops a session in the engine.
func (c *Client) Stop(ctx context.Context, id string) (store.Session, error) {
	rep, err := call[SessionReply](ctx, c, OpStop, SessionRef{ID: id})
	return rep.Session, err
}

// RestartFromSaved restarts a session whose disk is gone from its saved
// work, in the engine.
func (c *Client) RestartFromSaved(ctx context.Context, id string) (store.Session, error) {
	rep, err := withKeyring(ctx, c, func() (SessionReply, error) {
		return call[SessionReply](ctx, c, OpRestartSaved, SessionRef{ID: id})
	})
	return rep.Session, err
}

// Resume brings a suspended session back, or runs a session paused on a
// full disk again, in the engine.
func (c *Client) Resume(ctx context.Context, id string) (store.Session, error) {
	rep, err := withKeyring(ctx, c, func() (SessionReply, error) {
		return call[SessionReply](ctx, c, OpResume, SessionRef{ID: id})
	})
	return rep.Session, err
}

// Suspend saves a running session's VM and ends it, in the engine.
func (c *Client) Suspend(ctx context.Context, id string) (store.Session, error) {
	rep, err := call[SessionReply](ctx, c, OpSuspend, SessionRef{ID: id})
	return rep.Session, err
}

// Restart restarts a session in the engine.
func (c *Client) Restart(ctx context.Context, id string) (store.Session, error) {
	rep, err := withKeyring(ctx, c, func() (SessionReply, error) {
		return call[SessionReply](ctx, c, OpRestart, SessionRef{ID: id})
	})
	return rep.Session, err
}

// Wait waits, in the engine, until a session has ended.
func (c *Client) Wait(ctx context.Context, id string) (store.Session, error) {
	rep, err := call[SessionReply](ctx, c, OpWait, SessionRef{ID: id})
	return rep.Session, err
}

// Remove moves a session to the trash through the engine, which stops it
// first if it runs.
func (c *Client) Remove(ctx context.Context, id string, force bool) error {
	_, err := call[None](ctx, c, OpRemove, RemoveRequest{ID: id, Force: force})
	return err
}

// Trash lists the sessions in the trash and measures their folders, here.
func (c *Client) Trash(ctx context.Context) ([]session.Trashed, error) { return c.Local.Trash(ctx) }

// Restore brings a session back from the trash through the engine, which
// tells its subscribers.
func (c *Client) Restore(ctx context.Context, id string) (store.Session, error) {
	rep, err := call[SessionReply](ctx, c, OpRestore, SessionRef{ID: id})
	return rep.Session, err
}

// EmptyTrash deletes sessions from the trash for good, in the engine,
// which owns Sandbar's repositories of the projects.
func (c *Client) EmptyTrash(ctx context.Context, ids []string) (int, error) {
	rep, err := call[EmptyTrashReply](ctx, c, OpEmptyTrash, EmptyTrashRequest{IDs: ids})
	return rep.Deleted, err
}

// Merge merges a session's work through the engine, which saves a live
// session's first.
func (c *Client) Merge(ctx context.Context, id string, o session.MergeOptions) (workspace.MergeResult, error) {
	rep, err := call[MergeReply](ctx, c, OpMerge, MergeRequest{ID: id, Into: o.Into, Force: o.Force, AcceptSteering: o.AcceptSteering, Stash: o.Stash})
	return rep.Result, err
}

// MergeTarget reads here what the merge actions would do: it reads the
// repositories and changes nothing.
func (c *Client) MergeTarget(ctx context.Context, id string) (session.MergeTarget, error) {
	return c.Local.MergeTarget(ctx, id)
}

// Rename gives a session a new title in the engine, which tells every
// window and tray following it.
func (c *Client) Rename(ctx context.Context, id, title string) (store.Session, error) {
	rep, err := call[SessionReply](ctx, c, OpRename, RenameRequest{ID: id, Title: title})
	return rep.Session, err
}

// Commit saves and commits a running session's work in the engine,
// which owns its VM.
func (c *Client) Commit(ctx context.Context, id, message string) (session.CommitResult, error) {
	rep, err := call[CommitReply](ctx, c, OpCommit, CommitRequest{ID: id, Message: message})
	return rep.Result, err
}

// Interrupt ends a session's agent's turn in the engine.
func (c *Client) Interrupt(ctx context.Context, id string) error {
	_, err := call[None](ctx, c, OpInterrupt, SessionRef{ID: id})
	return err
}

// Sync brings the person's branch into a session's clone in the engine,
// and merges, rebases or asks the agent as mode says.
func (c *Client) Sync(ctx context.Context, id string, mode session.SyncMode) (session.SyncResult, error) {
	return call[session.SyncResult](ctx, c, OpSync, SyncRequest{ID: id, Mode: mode})
}

// Chat sends text to a session's agent in the engine.
func (c *Client) Chat(ctx context.Context, id, text string) error {
	_, err := call[None](ctx, c, OpChat, ChatRequest{ID: id, Text: text})
	return err
}

// Exec runs a command in a session's VM, through the engine.
func (c *Client) Exec(ctx context.Context, id string, req session.ExecRequest, stdout, stderr io.Writer) (session.ExecResult, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return session.ExecResult{}, err
	}
	stdout, stderr = orDiscard(stdout), orDiscard(stderr)
	rep, err := streamCall[ExecReply](ctx, r, OpExec, ExecRequest{ID: id, Exec: req}, func(o Output) error {
		if o.Stdout != nil {
			if _, err := stdout.Write(o.Stdout); err != nil {
				return err
			}
		}
		if o.Stderr != nil {
			if _, err := stderr.Write(o.Stderr); err != nil {
				return err
			}
		}
		return nil
	})
	return rep.Result, err
}

// Shell starts an interactive command in a session's VM, through the
// engine.
func (c *Client) Shell(ctx context.Context, id string, req session.ExecRequest, stdout, stderr io.Writer) (session.Terminal, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return nil, err
	}
	return r.Shell(ctx, id, req, stdout, stderr)
}

// AddNetRule adds a network rule through the engine, which runs the
// sessions that follow it.
func (c *Client) AddNetRule(ctx context.Context, ref string, scope session.NetScope, action, target string) (policy.Rule, error) {
	rep, err := call[AddNetRuleReply](ctx, c, OpAddNetRule, AddNetRuleRequest{Ref: ref, Scope: scope, Action: action, Target: target})
	return rep.Rule, err
}

// SetNetworkRules replaces a scope's rules through the engine.
func (c *Client) SetNetworkRules(ctx context.Context, scope session.NetScope, ref, text string, projectID int64) error {
	_, err := call[None](ctx, c, OpSetNetRules, SetNetRulesRequest{Scope: scope, Ref: ref, Text: text, ProjectID: projectID})
	return err
}

// ReloadNetworks recomposes the running sessions' policies, in the
// engine.
func (c *Client) ReloadNetworks(ctx context.Context) error {
	_, err := call[None](ctx, c, OpReloadNet, None{})
	return err
}

// Ports lists a running session's published ports, from the engine.
func (c *Client) Ports(ctx context.Context, id string) ([]netstack.Port, error) {
	rep, err := call[PortsReply](ctx, c, OpPorts, SessionRef{ID: id})
	return rep.Ports, err
}

// PublishPort publishes a guest port through the engine.
func (c *Client) PublishPort(ctx context.Context, id string, guest, host uint16) (netstack.Port, error) {
	rep, err := call[PortReply](ctx, c, OpPublish, PublishRequest{ID: id, Guest: guest, Host: host})
	return rep.Port, err
}

// UnpublishPort closes a published port through the engine.
func (c *Client) UnpublishPort(ctx context.Context, id string, guest uint16) error {
	_, err := call[None](ctx, c, OpUnpublish, UnpublishRequest{ID: id, Guest: guest})
	return err
}

// clientRetryMax bounds the wait between attempts to reach an engine.
const clientRetryMax = 5 * time.Second

// Subscribe follows the engine's events until ctx is done. It returns
// once the engine has the subscription (when it can be reached at once).
// The channel stays open across engines: when the engine hangs up (it
// quit, or died) Subscribe reaches the next one (Engine starts it) and
// goes on; events in between are not seen, and readers resynchronise
// from the store as they do anyway.
func (c *Client) Subscribe(ctx context.Context, id string) <-chan session.Event {
	out := make(chan session.Event, 256)
	first, err := c.subscribe(ctx, id)
	if err != nil {
		c.warn(ctx, err, 100*time.Millisecond)
	}
	go func() {
		defer close(out)
		wait := 100 * time.Millisecond
		for ctx.Err() == nil {
			var lasted time.Duration
			events := first
			first = nil
			if events == nil {
				events, err = c.subscribe(ctx, id)
				if err != nil {
					c.warn(ctx, err, wait)
				}
			}
			if events != nil {
				lasted = pass(ctx, events, out)
			}
			if lasted > clientRetryMax {
				wait = 100 * time.Millisecond
				continue
			}
			// An engine that cannot be reached, or hangs up at once, is
			// not hammered.
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, clientRetryMax)
		}
	}()
	return out
}

func (c *Client) subscribe(ctx context.Context, id string) (<-chan session.Event, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return nil, err
	}
	return r.Subscribe(ctx, id)
}

func (c *Client) warn(ctx context.Context, err error, wait time.Duration) {
	if ctx.Err() == nil && c.Logger != nil {
		c.Logger.Warn("reach the Sandbar engine for events", "err", err, "retry in", wait)
	}
}

// pass passes one engine's events to out until that engine hangs up or
// ctx is done, and returns how long that lasted.
func pass(ctx context.Context, events <-chan session.Event, out chan<- session.Event) time.Duration {
	began := time.Now()
	for ev := range events {
		select {
		case out <- ev:
		case <-ctx.Done():
			return time.Since(began)
		}
	}
	return time.Since(began)
}
