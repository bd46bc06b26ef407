package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sandbar/app/sandbox"
	"sandbar/app/workspace"
)

// Sync with the person's branch: the branch checked out in the project's
// repository is fetched into Sandbar's repository (data only), and from
// there into the session's clone as origin/<branch> (see
// workspace.SyncBundle). Then, as the person chooses, the clone's branch
// merges or rebases onto it in the VM, or the agent is asked to.

// SyncMode is what Sync does once the branch is in the clone.
type SyncMode string

// The modes of Sync.
const (
	// SyncFetch only brings the branch in, as origin/<branch>.
	SyncFetch SyncMode = ""
	// SyncMerge merges it into the clone's checked-out branch, in the VM.
	SyncMerge SyncMode = "merge"
	// SyncRebase rebases the clone's checked-out branch onto it, in the VM.
	SyncRebase SyncMode = "rebase"
	// SyncAsk sends the agent a message: to resolve the conflicts when a
	// merge or rebase stopped on them, otherwise to bring the branch in.
	SyncAsk SyncMode = "ask"
)

// SyncResult says what Sync did.
type SyncResult struct {
	// Branch is the person's branch; Ref is where the clone holds it
	// (origin/<branch>), at Commit.
	Branch, Ref, Commit string
	// Ahead counts the commits the clone's HEAD has that Ref lacks,
	// Behind the ones Ref has that HEAD lacks.
	Ahead, Behind int
	// Mode is what was asked.
	Mode SyncMode
	// Head is the clone's HEAD after a merge or rebase.
	Head string `json:",omitempty"`
	// Op is the merge or rebase left in progress ("merge", "rebase"),
	// with Conflicts naming its unmerged files (as workspace.SafeName
	// shows them), More counting those not named.
	Op        string   `json:",omitempty"`
	Conflicts []string `json:",omitempty"`
	More      int      `json:",omitempty"`
	// Asked is the message the agent was sent (SyncAsk).
	Asked string `json:",omitempty"`
}

// Conflicted reports whether a merge or rebase stopped on conflicts.
func (r SyncResult) Conflicted() bool { return r.Op != "" && len(r.Conflicts) > 0 }

// syncTimeout bounds the fetch of the branch into the clone (its
// bundle may be large) and syncStepTimeout a merge or rebase there.
const (
	syncTimeout     = 10 * time.Minute
	syncStepTimeout = 2 * time.Minute
)

// Sync brings the branch checked out in the session's repository into
// its running clone as origin/<branch>, then does what mode says. A
// merge or rebase that stops on conflicts leaves them in the clone, and
// the result names them (SyncResult.Conflicted); that is no error.
func (m *Manager) Sync(ctx context.Context, ref string, mode SyncMode) (SyncResult, error) {
	switch mode {
	case SyncFetch, SyncMerge, SyncRebase, SyncAsk:
	default:
		return SyncResult{}, fmt.Errorf("sync: unknown mode %q: use merge, rebase or ask", mode)
	}
	s, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return SyncResult{}, err
	}
	sb, err := r.syncSandbox()
	if err != nil {
		return SyncResult{}, err
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return SyncResult{}, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return SyncResult{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	if repo.Branch == "" {
		return SyncResult{}, fmt.Errorf("%s has no branch checked out (HEAD is detached): check out the branch to sync with, then sync again", repo.Root)
	}
	if err := workspace.CheckBranchName(ctx, repo.Branch); err != nil {
		return SyncResult{}, err
	}
	res := SyncResult{Branch: repo.Branch, Ref: workspace.SyncName(repo.Branch), Mode: mode}

	// A conflict in progress is answered as it stands: the agent is
	// asked to resolve it, and a new merge is refused by git itself.
	if mode == SyncAsk {
		st, err := r.syncState(ctx, sb, "status", repo.Branch)
		if err != nil {
			return res, err
		}
		if st.Op != "" && len(st.Conflicts) > 0 {
			res.Op, res.Conflicts, res.More, res.Head = st.Op, st.Conflicts, st.More, st.Head
			res.Commit = r.syncedCommit(ctx, repo.Branch)
			return res, r.askToSync(&res)
		}
	}

	if err := m.syncFetch(ctx, s.ProjectID, r, sb, repo, &res); err != nil {
		return res, err
	}
	r.systemLine(fmt.Sprintf("sync: your %s is %s at %s in the clone (%s the session's branch lacks, %s of its own)",
		res.Branch, res.Ref, short7(res.Commit), plural(res.Behind, "commit", "commits"), plural(res.Ahead, "commit", "commits")))
	switch mode {
	case SyncMerge, SyncRebase:
		st, err := r.syncState(ctx, sb, string(mode), repo.Branch)
		r.notifyChanged()
		if st != nil {
			res.Head, res.Op, res.Conflicts, res.More = st.Head, st.Op, st.Conflicts, st.More
		}
		if err != nil {
			return res, err
		}
		if res.Conflicted() {
			r.systemLine(fmt.Sprintf("sync: the %s of %s stopped on conflicts in %s: %s", res.Op, res.Ref,
				plural(len(res.Conflicts)+res.More, "file", "files"), strings.Join(res.Conflicts, ", ")))
			return res, nil
		}
		what := "merged " + res.Ref + " into the clone's branch"
		if mode == SyncRebase {
			what = "rebased the clone's branch onto " + res.Ref
		}
		r.systemLine(fmt.Sprintf("sync: %s; HEAD is %s", what, short7(res.Head)))
	case SyncAsk:
		return res, r.askToSync(&res)
	}
	return res, nil
}

// syncSandbox is the run's VM, or why it cannot sync.
func (r *run) syncSandbox() (*sandbox.Sandbox, error) {
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return nil, fmt.Errorf("session %s is not running yet: sync once its VM is up: %w", r.id, ErrState)
	}
	if err := r.pausedErr(); err != nil {
		return nil, err
	}
	return sb, nil
}

// syncFetch fetches the person's branch into Sandbar's repository and
// sends it to the clone, filling res's Commit, Ahead and Behind.
func (m *Manager) syncFetch(ctx context.Context, projectID int64, r *run, sb *sandbox.Sandbox, repo workspace.Repo, res *SyncResult) error {
	mr, unlock, err := m.mirror(ctx, projectID)
	if err != nil {
		return err
	}
	defer unlock()
	commit, err := mr.Fetch(ctx, repo, "refs/heads/"+repo.Branch, nil)
	if err != nil {
		return err
	}
	res.Commit = commit
	src, write, err := mr.SyncBundle(ctx, r.id, commit, m.baseCommit(r.s))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	out := &boundedBuffer{max: 256}
	errb := &syncTail{boundedTail{max: 2048}}
	p, err := sb.Client.StartExec(sandbox.ExecRequest{
		Argv:        []string{"sh", "-c", workspace.SyncFetchScript, "sandbar-sync", workspace.SyncRef(repo.Branch), commit, src},
		Interactive: true, Tools: true, Timeout: syncTimeout,
	}, out, errb)
	if err != nil {
		return fmt.Errorf("sync %s into the clone: %w", res.Ref, err)
	}
	// The bundle goes on the exec's stdin in pieces, the guest
	// acknowledging them; git writes it as the guest takes it.
	wrote := make(chan error, 1)
	go func() {
		var err error
		if write != nil {
			err = write(p)
		}
		if cerr := p.CloseWrite(); err == nil {
			err = cerr
		}
		wrote <- err
	}()
	x, err := p.Wait(ctx)
	werr := <-wrote
	switch {
	case err != nil:
		return fmt.Errorf("sync %s into the clone: %w", res.Ref, err)
	case x.Code != 0:
		return fmt.Errorf("sync %s into the clone: it exited %d: %s", res.Ref, x.Code, r.red.Redact(errb.text()))
	case werr != nil && !errors.Is(werr, sandbox.ErrExited):
		return fmt.Errorf("sync %s into the clone: send the bundle: %w", res.Ref, werr)
	}
	res.Ahead, res.Behind, err = workspace.ParseAheadBehind(out.Bytes())
	if err != nil {
		return fmt.Errorf("sync %s into the clone: %w", res.Ref, err)
	}
	return nil
}

// syncState runs workspace.SyncScript in the clone (mode merge, rebase
// or status) and reads its report. The report comes back even when git
// failed; the error then says why, in git's words.
func (r *run) syncState(ctx context.Context, sb *sandbox.Sandbox, mode, branch string) (*workspace.SyncState, error) {
	ctx, cancel := context.WithTimeout(ctx, syncStepTimeout)
	defer cancel()
	out := &boundedBuffer{max: 64 << 10}
	errb := &syncTail{boundedTail{max: 2048}}
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{
		Argv:  []string{"sh", "-c", workspace.SyncScript, "sandbar-sync", mode, workspace.SyncRef(branch)},
		Tools: true, Timeout: syncStepTimeout,
	}, out, errb)
	if err != nil {
		return nil, fmt.Errorf("%s in the clone: %w", mode, err)
	}
	st, perr := workspace.ParseSyncState(out.Bytes())
	if perr != nil {
		return nil, fmt.Errorf("%s in the clone: %w", mode, perr)
	}
	if res.Code != 0 && !(st.Op != "" && len(st.Conflicts) > 0) {
		return &st, fmt.Errorf("%s %s in the clone failed: %s", mode, workspace.SyncName(branch), r.red.Redact(errb.text()))
	}
	return &st, nil
}

// syncedCommit is where the clone's origin/<branch> is, "" if unknown.
func (r *run) syncedCommit(ctx context.Context, branch string) string {
	out, err := r.guestGit(ctx, "rev-parse", "-q", "--verify", workspace.SyncRef(branch)+"^{commit}")
	if c := strings.TrimSpace(out); err == nil && len(c) >= 40 && len(c) <= 64 {
		return c
	}
	return ""
}

// askToSync sends the agent the prepared message for res, and records it
// in res.Asked.
func (r *run) askToSync(res *SyncResult) error {
	msg := syncMessage(*res, r.s.Branch)
	if err := r.chat(msg); err != nil {
		return err
	}
	res.Asked = msg
	return nil
}

// syncMessage is the message the agent is sent: to resolve the
// conflicts a merge or rebase left (naming the files), or to bring the
// person's branch into its own.
func syncMessage(res SyncResult, branch string) string {
	at := ""
	if res.Commit != "" {
		at = " (at " + short7(res.Commit) + ")"
	}
	if res.Conflicted() {
		files := "`" + strings.Join(res.Conflicts, "`, `") + "`"
		if res.More > 0 {
			files += fmt.Sprintf(" and %d more (see `git status`)", res.More)
		}
		cont := "git merge --continue"
		if res.Op == "rebase" {
			cont = "git rebase --continue"
		}
		return fmt.Sprintf("The %s of my %s branch (%s in your clone%s) stopped on conflicts in %s: %s. "+
			"Please resolve them: keep what both sides meant, `git add` each file once it is resolved, run the tests if there are any, then `%s`. Do not abort the %s.",
			res.Op, res.Branch, res.Ref, at, plural(len(res.Conflicts)+res.More, "file", "files"), files, cont, res.Op)
	}
	return fmt.Sprintf("My %s branch has moved on: it is %s in your clone%s, with %s your branch %s lacks. "+
		"Please bring it into your branch: `git merge %s` (resolve any conflicts), run the tests if there are any, and commit.",
		res.Branch, res.Ref, at, plural(res.Behind, "commit", "commits"), branch, res.Ref)
}

// syncTail keeps the tail of what a sync script printed on stderr.
type syncTail struct{ boundedTail }

func (t *syncTail) Write(p []byte) (int, error) {
	t.write(p)
	return len(p), nil
}
