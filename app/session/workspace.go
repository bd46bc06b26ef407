package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
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
		r.systemLine(fmt.Sprintf("copied %d ignored files listed in .sandbarinclude/.worktreeinclude", len(info.Copied)))
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
	ctx, cancel := context.WithTimeout(ctx, guestGitTimeout)
	defer cancel()
	out := &boundedBuffer{max: maxGitOutput}
	errb := &boundedBuffer{max: 4096}
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{
		Argv:    append([]string{"sh", "-c", workspace.GuestGitScript, "git"}, args...),
		Timeout: guestGitTimeout, // in the workspace

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

// save brings the session's work back into Sandbar's repository: the
// branch, plus a snapshot of uncommitted work (see workspace.SaveScript).
// Saves run one at a time.
func (r *run) save(ctx context.Context) (workspace.SaveInfo, error) {
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return workspace.SaveInfo{}, fmt.Errorf("session %s is not running: %w", r.id, ErrState)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, saveTimeout)
	defer cancel()

	// The VM's output goes to a file first, at whatever pace the VM
	// chooses and without the project's lock, so a slow (or hostile)
	// session holds up no other; only the import takes the lock.
	spool := r.dir.SaveSpool()
	f, err := os.OpenFile(spool, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return workspace.SaveInfo{}, fmt.Errorf("save the session's work: %w", err)
	}
	defer func() { f.Close(); os.Remove(spool) }()
	out := &spoolWriter{f: f, max: MaxSavedWork + 1<<20, over: cancel}
	errb := &boundedBuffer{max: 4096}
	// A save that sends nothing for saveIdle is stalled (the agent owns
	// the VM: a FIFO where git reads, a git replaced by sleep): it ends,
	// and the stop goes on.
	var stalled atomic.Bool
	idle := time.AfterFunc(saveIdle, func() { stalled.Store(true); cancel() })
	out.progress = func() { idle.Reset(saveIdle) }
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{
		Argv:    []string{"sh", "-c", workspace.SaveScript, "sandbar-save", r.s.Branch, r.m.baseCommit(r.s)},
		Timeout: saveTimeout, // in the workspace
	}, out, errb)
	idle.Stop() // the idle bound is the VM's; the import has its own
	switch {
	case out.full:
		return workspace.SaveInfo{}, fmt.Errorf("save the session's work: %w: it passes %d MiB: commit less (large files belong outside git)", workspace.ErrSaveTooLarge, MaxSavedWork>>20)
	case err != nil && !stalled.Load():
		return workspace.SaveInfo{}, fmt.Errorf("save the session's work: %w", err)
	case err != nil:
		return workspace.SaveInfo{}, fmt.Errorf("save the session's work: the VM sent nothing for %s: ended (did the agent break git in its clone?)", saveIdle)
	case res.Code != 0:
		return workspace.SaveInfo{}, fmt.Errorf("save the session's work: git in the VM exited %d: %s", res.Code, strings.TrimSpace(lastLine(errb.String())))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return workspace.SaveInfo{}, err
	}
	mr, unlock, err := r.m.mirror(ctx, r.s.ProjectID)
	if err != nil {
		return workspace.SaveInfo{}, err
	}
	defer unlock()
	info, err := mr.ImportSave(ctx, f, r.id, MaxSavedWork)
	if err != nil {
		return info, fmt.Errorf("save the session's work: %w", err)
	}
	if err := os.WriteFile(r.dir.SavedAt(), []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600); err != nil {
		r.log.Warn("record when the work was saved", "err", err)
	}
	for _, l := range strings.Split(errb.String(), "\n") {
		if why, ok := strings.CutPrefix(l, "sandbar-save: left out of the snapshot"); ok {
			r.systemLine("left out of the saved snapshot of uncommitted work" + why + " (commit it if it belongs in the repository)")
		}
	}
	r.timing(ctx, "save", time.Since(start))
	r.log.Info("work saved", "branch", short(info.Branch), "snapshot", short(info.Snapshot), "bytes", info.Bytes, "took", time.Since(start))
	return info, nil
}

// spoolWriter writes at most max bytes to f; past that it stops the
// command (over) and drops the rest.
type spoolWriter struct {
	f    *os.File
	max  int64
	n    int64
	full bool
	over func()
	// progress, if set, hears of each write.
	progress func()
}

func (w *spoolWriter) Write(p []byte) (int, error) {
	if w.progress != nil {
		w.progress()
	}
	if w.full || w.n+int64(len(p)) > w.max {
		if !w.full {
			w.full = true
			w.over()
		}
		return len(p), nil
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

// saveBeforeStop saves the session's work before its VM stops, and says
// so in the session's log either way.
func (r *run) saveBeforeStop() {
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	info, err := r.save(ctx)
	failed := r.dir.SaveError()
	if err != nil {
		msg := err.Error()
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		os.WriteFile(failed, []byte(msg+"\n"), 0o600)
		r.systemLine("the session's work could not be saved: " + msg + ": its clone is kept on the session's disk; restart the session to try again")
		return
	}
	os.Remove(failed)
	what := "no changes"
	if info.Snapshot != info.Head {
		what = "uncommitted changes kept as a snapshot"
	}
	r.systemLine(fmt.Sprintf("work saved: branch %s at %s, %s (%s)", r.s.Branch, short(info.Branch), what, humanSize(info.Bytes)))
}

// boundedBuffer keeps at most max bytes and notes that more came.
type boundedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
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

// savedWork opens the project's mirror for reading a session's saved work.
func (m *Manager) savedWork(ctx context.Context, s store.Session) (*workspace.Mirror, func(), error) {
	if m.isLegacy(s) {
		return nil, func() {}, m.legacyError(s)
	}
	if err := m.saveFailed(s); err != nil {
		return nil, func() {}, err
	}
	return m.mirror(ctx, s.ProjectID)
}

// notSavedSinceBoot is the save-error file's text while the VM runs. That
// file (config.SessionDir.SaveError) says why the session's clone holds
// work Sandbar has not saved: written when its VM is up (a VM or an
// engine that dies saves nothing), rewritten when a save fails, and
// removed when one succeeds.
const notSavedSinceBoot = "the session stopped before its work was saved: its VM or Sandbar ended unexpectedly"

// markUnsaved records that the clone may hold work not yet saved.
func (r *run) markUnsaved() {
	if err := os.WriteFile(r.dir.SaveError(), []byte(notSavedSinceBoot+"\n"), 0o600); err != nil {
		r.log.Warn("record that the work is not saved", "err", err)
	}
}

// ErrNotSaved: the session's last save failed, so what Sandbar holds of
// its work is older than its clone, or nothing.
var ErrNotSaved = errors.New("the session's work could not be saved")

// saveFailed says, when the last save of a stopped session failed, why
// and what to do: its clone is still on its disk.
func (m *Manager) saveFailed(s store.Session) error {
	if r := m.running(s.ID); r != nil && r.vmUp() {
		return nil
	}
	why := m.inspect(s.ID).SaveError
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w when it stopped (%s): its clone is kept on the session's disk; restart the session to try again, and look inside with `sandbar shell %s`", ErrNotSaved, why, short(s.ID))
}

// pruneBases deletes a project's base disks that no session boots on any
// more, keeping the newest (the next session most likely starts there).
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
	used := map[string]bool{}
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

// savedAt is when the session's work was last saved: recorded by save,
// else (a session saved before that was recorded) when it ended.
func (m *Manager) savedAt(s store.Session) time.Time {
	if t := m.inspect(s.ID).SavedAt; !t.IsZero() {
		return t
	}
	return s.Ended
}

// Export writes the session's files, as last saved, into a read-only
// folder Sandbar owns (see workspace.Mirror.Export) and returns it, with
// when that work was saved. A session whose VM runs here is saved first,
// so the export is its latest. The agent's own files stay in its VM:
// nothing on the host opens them.
func (m *Manager) Export(ctx context.Context, ref string) (string, time.Time, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return "", time.Time{}, err
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		if _, err := r.save(ctx); err != nil {
			return "", time.Time{}, err
		}
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return "", time.Time{}, err
	}
	defer unlock()
	info, err := mr.Export(ctx, s.ID, m.cfg.Paths.SessionDir(s.ID).Export())
	if err != nil {
		return "", time.Time{}, err
	}
	if len(info.Skipped) > 0 {
		m.log.Info("export: left out", "session", s.ID, "count", len(info.Skipped), "first", info.Skipped[0])
	}
	return info.Dir, m.savedAt(s), nil
}
