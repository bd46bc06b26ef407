// Package engine is the versioned local API between the Sandbar
// processes of one data directory. Exactly one of them is the engine: it
// holds config.Paths.EngineLock, serves config.Paths.EngineSocket (Server)
// and owns every VM. The others (the CLI, a second window) are its
// clients: Client implements session.Service method by method, reading
// the store and the saved work of stopped sessions in its own process and
// sending everything that touches a VM to the engine (Remote).
//
// It is not the session manager (app/session does the work; the server
// only decodes a request, calls the Manager and encodes its reply), and it
// does not start an engine when none answers: main's dialer does that, by
// running `sandbar serve`.
//
// The wire is JSON, one object a line, over a unix socket; one connection
// carries one operation. The client opens with a hello naming its API
// version; the engine answers with its own and its pid, and each side
// refuses a version it does not speak. Then the client sends the call (an
// operation name and its typed request) and the engine sends frames: items
// of a stream, then one final frame holding the typed reply or an error
// with its code, so that errors.Is works across processes.
//
// Adding an operation touches three places: session.Service, the server's
// table (server.go) and Client (client.go), with a typed request and reply
// here when the operation needs new ones.
package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/secrets"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// APIVersion is the version of the API this Sandbar speaks. Version 1 was
// the unversioned protocol of the Sandbars before the handshake; bump it
// whenever a request, a reply or an operation's meaning changes.
// Version 3 added rename (titles); 4, merge into the current branch and
// the merge target; 5, the trash (restore, trash-empty; remove moves to
// the trash), and yield with the keyring error code; 6, resume (a VM
// paused on a full disk) and the disk_full error code, restart-saved (a
// session whose disk is gone, from its saved work) and scratch_gone; 7,
// prepared environments (env-prepare, env-prepared-remove).
const APIVersion = 7

// The operations, by their names on the wire.
const (
	OpHello         = "hello" // the handshake, a connection's first line
	OpAddProject    = "add-project"
	OpRemoveProject = "remove-project"
	OpStart         = "start"
	OpStop          = "stop"
	OpRestart       = "restart"
	OpResume        = "resume"
	OpSuspend       = "suspend"
	OpRestartSaved  = "restart-saved"
	OpWait          = "wait"
	OpRemove        = "remove"
	OpMerge         = "merge"
	OpRename        = "rename"
	OpChat          = "chat"
	OpInterrupt     = "interrupt"
	OpSync          = "sync"
	OpCommit        = "commit"
	OpExec          = "exec"
	OpShell         = "shell"
	OpChanges       = "changes"
	OpFileDiff      = "diff"
	OpExport        = "export"
	OpSubscribe     = "subscribe"
	OpAddNetRule    = "net-rule"
	OpSetNetRules   = "net-rules-set"
	OpReloadNet     = "net-reload"
	OpPorts         = "ports"
	OpPublish       = "publish"
	OpUnpublish     = "unpublish"
	OpRestore       = "restore"
	OpEmptyTrash    = "trash-empty"
	// OpPrepareEnv starts (or joins) a project's environment preparation
	// in the engine; OpRemovePrepared deletes a prepared environment.
	OpPrepareEnv     = "env-prepare"
	OpRemovePrepared = "env-prepared-remove"
	// OpYield asks a headless engine that cannot reach the keyring to
	// hand over to the caller, which can (Client.handOver).
	OpYield = "yield"
)

// Hello is the handshake: the client's first line carries its API version
// (with Op OpHello), and the engine answers with its own and its pid.
type Hello struct {
	Op  string `json:"op,omitempty"`
	API int    `json:"api"`
	PID int    `json:"pid,omitempty"`
}

// callLine is a connection's second line: one operation and its request.
type callLine struct {
	Op  string          `json:"op"`
	Req json.RawMessage `json:"req,omitempty"`
}

// frame is one line from the engine. A stream sends Items, Started once
// an operation that runs on is under way (a subscription is registered,
// a shell's command runs), and last a frame with Done and either Reply or
// Error and its Code.
type frame struct {
	Hello   *Hello          `json:"hello,omitempty"`
	Started bool            `json:"started,omitempty"`
	Item    json.RawMessage `json:"item,omitempty"`
	Done    bool            `json:"done,omitempty"`
	Reply   json.RawMessage `json:"reply,omitempty"`
	Error   string          `json:"error,omitempty"`
	Code    string          `json:"code,omitempty"`
	// Codes are all the codes the error matches (Code is the first, for
	// clients that know only it): an error may wrap several sentinels.
	Codes []string `json:"codes,omitempty"`
}

// None is the request or reply of an operation that has none.
type None struct{}

// SessionRef names a session (an id or a unique prefix of one): the
// request of the operations on one session that take nothing else (stop,
// restart, wait, changes, export, ports).
type SessionRef struct {
	ID string `json:"id"`
}

// SessionReply is a session as an operation left it.
type SessionReply struct {
	Session store.Session `json:"session"`
}

type (
	AddProjectRequest struct {
		Path string `json:"path"`
	}
	AddProjectReply struct {
		Project store.Project `json:"project"`
		Note    string        `json:"note,omitempty"`
	}
	RemoveProjectRequest struct {
		Ref string `json:"ref"`
	}
	StartRequest struct {
		Options session.Options `json:"options"`
	}
	RemoveRequest struct {
		ID    string `json:"id"`
		Force bool   `json:"force,omitempty"`
	}
	MergeRequest struct {
		ID             string `json:"id"`
		Into           bool   `json:"into,omitempty"`
		Force          bool   `json:"force,omitempty"`
		AcceptSteering bool   `json:"accept_steering,omitempty"`
		Stash          bool   `json:"stash,omitempty"`
	}
	CommitRequest struct {
		ID      string `json:"id"`
		Message string `json:"message,omitempty"`
	}
	CommitReply struct {
		Result session.CommitResult `json:"result"`
	}
	MergeReply struct {
		Result workspace.MergeResult `json:"result"`
	}
	PrepareEnvRequest struct {
		Project string `json:"project"`
		Rebuild bool   `json:"rebuild,omitempty"`
	}
	PrepareEnvReply struct {
		Prepared session.PreparedView `json:"prepared"`
	}
	RemovePreparedRequest struct {
		Project string `json:"project"`
		Key     string `json:"key"`
	}
	RenameRequest struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	ChatRequest struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	// SyncRequest is Sync's request; the reply is session.SyncResult.
	SyncRequest struct {
		ID   string           `json:"id"`
		Mode session.SyncMode `json:"mode,omitempty"`
	}
	// ExecRequest is Exec's and Shell's request; Output frames stream
	// the command's output and the reply is ExecReply.
	ExecRequest struct {
		ID   string              `json:"id"`
		Exec session.ExecRequest `json:"exec"`
	}
	ExecReply struct {
		Result session.ExecResult `json:"result"`
	}
	ChangesReply struct {
		Changes workspace.Changes `json:"changes"`
	}
	FileDiffRequest struct {
		ID   string               `json:"id"`
		File workspace.FileChange `json:"file"`
	}
	FileDiffReply struct {
		Diff string `json:"diff"`
	}
	// ExportReply is where Export wrote a session's files, and when the
	// work it holds was saved.
	ExportReply struct {
		Dir  string    `json:"dir"`
		When time.Time `json:"when"`
	}
	// SubscribeRequest names one session, or every one ("").
	SubscribeRequest struct {
		Session string `json:"session,omitempty"`
	}
	AddNetRuleRequest struct {
		Ref    string           `json:"ref"`
		Scope  session.NetScope `json:"scope"`
		Action string           `json:"action"`
		Target string           `json:"target"`
	}
	AddNetRuleReply struct {
		Rule policy.Rule `json:"rule"`
	}
	SetNetRulesRequest struct {
		Scope     session.NetScope `json:"scope"`
		Ref       string           `json:"ref,omitempty"`
		Text      string           `json:"text"`
		ProjectID int64            `json:"project_id,omitempty"`
	}
	PortsReply struct {
		Ports []netstack.Port `json:"ports"`
	}
	PublishRequest struct {
		ID    string `json:"id"`
		Guest uint16 `json:"guest"`
		Host  uint16 `json:"host,omitempty"`
	}
	PortReply struct {
		Port netstack.Port `json:"port"`
	}
	UnpublishRequest struct {
		ID    string `json:"id"`
		Guest uint16 `json:"guest"`
	}
	// EmptyTrashRequest names the sessions to delete from the trash;
	// none means all of them.
	EmptyTrashRequest struct {
		IDs []string `json:"ids,omitempty"`
	}
	EmptyTrashReply struct {
		Deleted int `json:"deleted"`
	}
	// YieldReply says whether the engine handed over, and if not why.
	YieldReply struct {
		Yielded bool   `json:"yielded,omitempty"`
		Reason  string `json:"reason,omitempty"`
	}
)

// Output is a piece of a command's output (Exec, Shell).
type Output struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
}

// ShellInput is one client→engine line of a shell's connection, after
// the call: a piece of stdin, its end, or the terminal's new size.
type ShellInput struct {
	Stdin []byte `json:"stdin,omitempty"`
	EOF   bool   `json:"eof,omitempty"`
	Rows  int    `json:"rows,omitempty"`
	Cols  int    `json:"cols,omitempty"`
}

// The error codes: a sentinel error of the engine's keeps its identity in
// the client as a *RemoteError that errors.Is matches to the same
// sentinel. The first code whose error matches is sent.
var errorCodes = []struct {
	code string
	err  error
}{
	{"dirty", session.ErrDirty}, // locally a *workspace.DirtyError, see codeOf
	{"not_found", store.ErrNotFound},
	{"ambiguous", store.ErrAmbiguous},
	{"exists", store.ErrExists},
	{"budget", session.ErrBudget},
	{"scratch_gone", session.ErrScratchGone},
	{"state", session.ErrState},
	{"owned", session.ErrOwnedElsewhere},
	{"no_credentials", session.ErrNoCredentials},
	{"bad_options", session.ErrBadOptions},
	{"network_rules", session.ErrNetworkRules},
	{"no_network", session.ErrNoNetwork},
	{"no_model_api", session.ErrNoModelAPI},
	{"nothing_to_merge", workspace.ErrNothingToMerge},
	{"steering", workspace.ErrSteering},
	{"nothing_to_commit", session.ErrNothingToCommit},
	{"stashable", workspace.ErrStashable},
	{"dirty_tree", workspace.ErrDirtyTree},
	{"conflict", workspace.ErrConflict},
	{"port_in_use", netstack.ErrPortInUse},
	{"keyring", secrets.ErrUnavailable},
	// Why a folder is not a project, so that the app words its fix by
	// how the folder was given (dropped, chosen, typed).
	{"not_trusted", workspace.ErrNotTrusted},
	{"not_repo", workspace.ErrNotRepo},
	{"bare_repo", workspace.ErrBareRepo},
	{"empty_repo", workspace.ErrEmptyRepo},
	{"not_saved", session.ErrNotSaved},
	{"disk_full", session.ErrDiskFull},
	{"legacy_session", session.ErrLegacySession},
	{"damaged", session.ErrDamaged},
	{"diverged", workspace.ErrDiverged},
	{"checked_out", workspace.ErrCheckedOut},
	{"old_git", workspace.ErrOldGit},
	{"no_git", workspace.ErrNoGit},
	{"too_many_files", workspace.ErrTooManyFiles},
	{"save_too_large", workspace.ErrSaveTooLarge},
	{"pack_too_large", workspace.ErrPackTooLarge},
	{"git_output_too_large", workspace.ErrOutputTooLarge},
}

// codeOf names err's sentinel for the wire ("" for none): the first of
// codesOf.
func codeOf(err error) string {
	if codes := codesOf(err); len(codes) > 0 {
		return codes[0]
	}
	return ""
}

// codesOf names every sentinel err matches, in the table's order.
func codesOf(err error) []string {
	var codes []string
	if _, ok := errors.AsType[*workspace.DirtyError](err); ok {
		codes = append(codes, "dirty")
	}
	for _, c := range errorCodes {
		if errors.Is(err, c.err) && !slices.Contains(codes, c.code) {
			codes = append(codes, c.code)
		}
	}
	return codes
}

// errorOf is the sentinel a code names (nil for none, or one this Sandbar
// does not know).
func errorOf(code string) error {
	for _, c := range errorCodes {
		if c.code == code {
			return c.err
		}
	}
	return nil
}

// remoteError is the error of a final frame, with every sentinel its
// codes name that this Sandbar knows.
func remoteError(f frame) *RemoteError {
	e := &RemoteError{Msg: f.Error, Sentinel: errorOf(f.Code)}
	for _, code := range f.Codes {
		if s := errorOf(code); s != nil && s != e.Sentinel {
			e.Also = append(e.Also, s)
		}
	}
	return e
}

// RemoteError is an error the engine returned: its message, and the
// sentinels it matched there.
type RemoteError struct {
	Msg      string
	Sentinel error
	// Also are the other sentinels it matched.
	Also []error
}

func (e *RemoteError) Error() string { return e.Msg }

// Is matches the sentinels the error matched in the engine.
func (e *RemoteError) Is(target error) bool {
	return e.Sentinel != nil && target == e.Sentinel || slices.Contains(e.Also, target)
}

// ErrVersion is what a VersionError is: the engine speaks another API.
var ErrVersion = errors.New("the Sandbar engine speaks another API version")

// VersionError is a client's refusal of an engine that speaks another API
// version than its own.
type VersionError struct {
	PID    int // the engine's process, 0 when unknown
	Engine int // the engine's API version
	Client int // this Sandbar's
}

func (e *VersionError) Error() string {
	who := "the Sandbar engine"
	if e.PID > 0 {
		who = fmt.Sprintf("the Sandbar engine running as process %d", e.PID)
	}
	return fmt.Sprintf("%s speaks API v%d, this sandbar v%d: quit that Sandbar and try again", who, e.Engine, e.Client)
}

func (e *VersionError) Is(target error) bool { return target == ErrVersion }
