package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// A session's clone lives on a disk inside its VM: a read-only base disk
// per project and commit (built on the host from Sandbar's own repository
// of the project) under a copy-on-write layer on the session's scratch
// disk. The host never runs git, or opens a file, where the agent writes.
// Work comes back as data: the guest packs its branch and a snapshot of
// its working tree (workspace.SaveScript), and the host takes the pack
// into Sandbar's repository with git's own checks (ImportSave) before a
// merge fetches from there.

// Bounds on what the host reads back from a session's VM.
const (
	// MaxSavedWork bounds the pack a session's work comes back in.
	MaxSavedWork = 2 << 30
	// maxGitOutput bounds one git command's output read from the guest.
	maxGitOutput = 16 << 20
	// saveTimeout bounds one save, from the script's start to the refs.
	saveTimeout = 10 * time.Minute
	// saveIdle ends a save from which nothing came for that long.
	saveIdle = 90 * time.Second
	// guestGitTimeout bounds one git command run in the guest for status.
	guestGitTimeout = time.Minute
)

// ErrLegacySession: the session was made by a Sandbar that shared its
// clone with the VM; it cannot run or merge any more.
var ErrLegacySession = errors.New("session made by an older Sandbar")

// legacyError says what to do with a session from before the in-VM
// workspace: its folder is kept as it was.
func (m *Manager) legacyError(s store.Session) error {
	return fmt.Errorf("session %s was made by an older Sandbar, which shared its clone with the VM, and Sandbar no longer runs git where an agent wrote: its files are kept, untouched, in %s — look at them yourself (treat its .git as untrusted: do not run git there with your usual configuration), then delete the session with `sandbar rm --force %s`, and start a new one (%w)",
		s.ID, m.cfg.Paths.SessionDir(s.ID).LegacyWorkspace(), short(s.ID), ErrLegacySession)
}

// isLegacy reports whether the session's directory holds a shared clone
// and no base disk: a session from before the in-VM workspace.
func (m *Manager) isLegacy(s store.Session) bool { return m.inspect(s.ID).Legacy }

// mirror opens Sandbar's repository of a project; one user at a time
// per project, since base disks are built and saves imported there.
// Waiting for the turn honours ctx.
func (m *Manager) mirror(ctx context.Context, projectID int64) (*workspace.Mirror, func(), error) {
	m.mu.Lock()
	if m.mirrorLocks == nil {
		m.mirrorLocks = map[int64]chan struct{}{}
	}
	sem := m.mirrorLocks[projectID]
	if sem == nil {
		sem = make(chan struct{}, 1)
		m.mirrorLocks[projectID] = sem
	}
	m.mu.Unlock()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, func() {}, fmt.Errorf("wait for Sandbar's repository of the project (busy with another session's work): %w", ctx.Err())
	}
	unlock := func() { <-sem }
	mr, err := workspace.OpenMirror(ctx, m.cfg.Paths.ProjectRepo(projectID))
	if err != nil {
		unlock()
		return nil, func() {}, err
	}
	return mr, unlock, nil
}

// provision makes the session's workspace: the project's history copied
// into Sandbar's repository (only what is new), and the base disk at the
// session's base commit built, or reused when another session made it.
func (r *run) provision(ctx context.Context) error {
	start := time.Now()
	lastPct, lastPhase := -10, ""
	progress := func(p workspace.Progress) {
		if p.Phase != lastPhase || p.Percent >= lastPct+10 || p.Percent == 100 {
			lastPct, lastPhase = p.Percent, p.Phase
			r.m.hub.publish(Event{Session: r.id, Time: time.Now(), Kind: EventState, State: StateProvisioning,
				Reason: fmt.Sprintf("%s %d%%", strings.ToLower(p.Phase[:1])+p.Phase[1:], p.Percent)})
		}
	}
	mr, unlock, err := r.m.mirror(ctx, r.s.ProjectID)
	if err != nil {
		return err
	}
	defer unlock()
	commit, err := mr.Fetch(ctx, r.repo, r.s.Base, progress)
	if err != nil {
		return err
	}
	info, err := mr.BuildBase(ctx, workspace.BaseOptions{
		Source: r.repo, Commit: commit, Dir: r.m.cfg.Paths.ProjectBases(r.s.ProjectID), Progress: progress,
		IncludeLists: r.includeLists,
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(r.dir.BaseCommit(), []byte(commit+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the session's base: %w", err)
	}
	if err := os.WriteFile(r.dir.BaseDisk(), []byte(info.Path+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the session's base disk: %w", err)
	}
	took := time.Since(start)
	r.timing(ctx, "clone", took)
	how := fmt.Sprintf("built its workspace disk (%s)", humanSize(info.Size))
	if info.Reused {
		how = "reused its workspace disk"
	}
	r.systemLine(fmt.Sprintf("cloned %s at %s on branch %s: %s in %s; the clone lives inside the VM", r.repo.Root, short(commit), r.s.Branch, how, took.Round(time.Millisecond)))
	if len(info.Copied) > 0 {
		r.systemLine(fmt.Sprintf("copied %d ignored files listed in .sandbarinclude/.worktreeinclude (trusted)", len(info.Copied)))
	}
	for _, s := range info.Skipped {
		r.systemLine("include list: left out " + s)
	}
	if len(info.Submodules) > 0 {
		r.systemLine("carried submodules in from the repository's copies: " + strings.Join(info.Submodules, ", "))
	}
	for _, s := range info.SkippedSubmodules {
		r.systemLine("submodule left empty: " + s)
	}
	if n := len(info.LFSPointers); n > 0 {
		some := info.LFSPointers[:min(n, 5)]
		more := ""
		if n > len(some) {
			more = fmt.Sprintf(" and %d more", n-len(some))
		}
		what := fmt.Sprintf("%d Git LFS files are pointer files", n)
		if n == 1 {
			what = "1 Git LFS file is a pointer file"
		}
		r.systemLine(fmt.Sprintf("%s in this session (%s%s): Sandbar does not bring LFS content into sessions yet, so the agent sees the pointer text", what, strings.Join(some, ", "), more))
	}
	return nil
}

// baseDisk is the session's base disk, as provision recorded it.
func (r *run) baseDisk() (string, error) {
	p, err := readSmallFile(r.dir.BaseDisk())
	if err != nil {
		return "", fmt.Errorf("session %s has no workspace disk recorded (%v): start a new session", r.id, err)
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the workspace disk of session %s (%s) is gone: start a new session", r.id, p)
	}
	return p, nil
}

// guestGit runs git in the session's clone inside its VM, through
// workspace.GuestGitScript, reading at most maxGitOutput bytes back.
func (r *run) guestGit(ctx context.Context, args ...string) (string, error) {
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return "", fmt.Errorf("session %s is not running: %w", r.id, ErrState)
	}
	if err := r.pausedErr(); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, guestGitTimeout)
	defer cancel()
	out := &boundedBuffer{max: maxGitOutput}
	errb := &boundedBuffer{max: 4096}
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{
		Argv:    append([]string{"sh", "-c", workspace.GuestGitScript, "git"}, args...),
		Timeout: guestGitTimeout, // in the workspace
		Tools:   true,            // Sandbar's git, whatever the image has

	}, out, errb)
	switch {
	case err != nil:
		return "", fmt.Errorf("git %s in the VM: %w", args[0], err)
	case out.over:
		return "", fmt.Errorf("git %s in the VM printed more than %d MiB: not shown", args[0], maxGitOutput>>20)
	case res.Code != 0:
		return out.String(), fmt.Errorf("git %s in the VM exited %d: %s", args[0], res.Code, strings.TrimSpace(lastLine(errb.String())))
	}
	return out.String(), nil
}

// liveChanges asks the VM for the clone's changes since its base.
func (r *run) liveChanges(ctx context.Context) (workspace.Changes, error) {
	return workspace.Status(ctx, r.guestGit, r.m.baseCommit(r.s))
}

// notifyChanged asks watchChanges for a fresh view, without waiting.
func (r *run) notifyChanged() {
	select {
	case r.wsChanged <- struct{}{}:
	default:
	}
}

// watchChanges turns the guest's workspace:changed notices into Changes
// events, one computation at a time, coalescing notices that arrive
// meanwhile, until stop closes.
func (r *run) watchChanges(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wsChanged:
		}
		ch, err := r.liveChanges(ctx)
		if err != nil {
			r.log.Debug("workspace changes", "err", err)
			continue
		}
		r.m.hub.publish(Event{Session: r.id, Time: time.Now(), Kind: EventChanges, Changes: &ch})
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// pruneBases deletes a project's base disks that no session boots on any
// more (one in the trash included), keeping the newest (the next session most likely starts there).
// A base disk is as large as the repository's checkout and history.
func (m *Manager) pruneBases(ctx context.Context, projectID int64) {
	dir := m.cfg.Paths.ProjectBases(projectID)
	disks, _ := filepath.Glob(filepath.Join(dir, "base-*.ext4"))
	if len(disks) < 2 {
		return
	}
	sessions, err := m.cfg.Store.Sessions(ctx, store.SessionFilter{ProjectID: projectID})
	if err != nil {
		return
	}
	used := m.trashedBaseDisks(ctx, projectID)
	for _, s := range sessions {
		if p := m.inspect(s.ID).BaseDisk; p != "" {
			used[p] = true
		}
	}
	newest, newestTime := "", time.Time{}
	for _, d := range disks {
		if fi, err := os.Lstat(d); err == nil && fi.ModTime().After(newestTime) {
			newest, newestTime = d, fi.ModTime()
		}
	}
	for _, d := range disks {
		if !used[d] && d != newest {
			os.Remove(d)
			os.Remove(d + ".lfs")
		}
	}
}
