package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

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
	if err := r.pausedErr(); err != nil {
		return workspace.SaveInfo{}, err
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
	// A save that sends nothing for saveIdle is stalled (the agent owns
	// the VM: a FIFO where git reads, a git replaced by sleep): it ends,
	// and the stop goes on. The script reports its progress on stderr,
	// so a save of many files that is busy is never taken for stuck.
	var stalled atomic.Bool
	idle := time.AfterFunc(saveIdle, func() { stalled.Store(true); cancel() })
	out.progress = func() { idle.Reset(saveIdle) }
	errb := &saveStderr{kept: boundedBuffer{max: 4096}, progress: out.progress, since: start}
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{
		Argv:    []string{"sh", "-c", workspace.SaveScript, "sandbar-save", r.s.Branch, r.m.baseCommit(r.s)},
		Timeout: saveTimeout, // in the workspace
		Tools:   true,        // Sandbar's git, whatever the image has
	}, out, errb)
	idle.Stop() // the idle bound is the VM's; the import has its own
	inVM := time.Since(start)
	phases := errb.phases(time.Now())
	switch {
	case out.full:
		return workspace.SaveInfo{}, fmt.Errorf("save the session's work: %w: it passes %d MiB: commit less (large files belong outside git)", workspace.ErrSaveTooLarge, MaxSavedWork>>20)
	case err != nil && !stalled.Load():
		return workspace.SaveInfo{}, fmt.Errorf("save the session's work: %w", err)
	case err != nil:
		return workspace.SaveInfo{}, fmt.Errorf("save the session's work: %w: the save in the VM made no progress for %s (last step: %s)", ErrSaveStalled, saveIdle, errb.lastStep())
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
	imported := time.Now()
	info, err := mr.ImportSave(ctx, f, r.id, MaxSavedWork)
	if err != nil {
		r.log.Warn("work not saved", "took", time.Since(start), "in VM", inVM, "phases", phases, "import", time.Since(imported), "err", err)
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
	took := time.Since(start)
	r.timing(ctx, "save", took)
	r.log.Info("work saved", "branch", short(info.Branch), "snapshot", short(info.Snapshot), "bytes", info.Bytes, "took", took,
		"paths", errb.paths, "in VM", inVM, "phases", phases, "import", time.Since(imported))
	// Many changed files take a while to save: the session's log says
	// how many and how long (the number is the VM's own count).
	if errb.paths > 0 && info.Snapshot != info.Head {
		r.systemLine(fmt.Sprintf("saved %s uncommitted changed paths in %s (%s in the VM, %s to check and take in)",
			thousands(errb.paths), took.Round(100*time.Millisecond), inVM.Round(100*time.Millisecond), time.Since(imported).Round(100*time.Millisecond)))
	}
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
// so in the session's log either way. It returns why the save failed.
func (r *run) saveBeforeStop() error {
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
		return err
	}
	os.Remove(failed)
	what := "no changes"
	if info.Snapshot != info.Head {
		what = "uncommitted changes kept as a snapshot"
	}
	r.systemLine(fmt.Sprintf("work saved: branch %s at %s, %s (%s)", r.s.Branch, short(info.Branch), what, humanSize(info.Bytes)))
	r.autoCommit(ctx, info)
	return nil
}

// ReasonNotSaved begins the reason of a session that stopped without its
// work saved: "work not saved: <why>".
const ReasonNotSaved = "work not saved: "

// NotSaved reports whether a stopped session's reason says its work
// could not be saved, and why.
func NotSaved(reason string) (why string, ok bool) {
	return strings.CutPrefix(reason, ReasonNotSaved)
}

// unsavedReason is the reason a session ends with: reason, or, when its
// save failed, that the work was not saved and why. The cause is said
// as it was found (a timeout, a full disk, git's own error in the VM).
func unsavedReason(reason string, saveErr error) string {
	if saveErr == nil {
		return reason
	}
	why := strings.TrimPrefix(saveErr.Error(), "save the session's work: ")
	if len(why) > 500 {
		why = why[:500] + "…"
	}
	return ReasonNotSaved + why
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

// boundedBuffer keeps at most max bytes and notes that more came.
type boundedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

// ErrSaveStalled: the save in the VM stopped making progress.
var ErrSaveStalled = errors.New("the save stopped making progress")

// saveStderr takes the save script's stderr: every write is progress;
// the script's progress lines ("sandbar-save: progress …") and git's own
// (ended by \r, or "… objects: …, done.") are kept apart, as the last
// step, from the text kept for a person (what was left out, git's
// errors), which is bounded.
type saveStderr struct {
	kept     boundedBuffer
	progress func()
	partial  []byte
	step     string
	// times is how long each phase of the save in the VM took, by the
	// progress lines that begin them (see phaseOf); paths is how many
	// paths the script said it adds. Both are the guest's word: they go
	// to logs, never decide anything.
	times [numPhases]time.Duration
	cur   savePhase
	since time.Time
	paths int
}

// savePhase is a phase of the save in the VM, as its progress lines say.
type savePhase int

const (
	phaseStart    savePhase = iota // before the first progress line
	phaseList                      // listing the changes
	phaseAdd                       // adding the changed paths
	phaseSnapshot                  // writing the snapshot's trees and commit
	phaseKeep                      // keeping the snapshot's objects in the clone
	phasePack                      // packing and sending what the host takes in
	numPhases
)

var phaseNames = [numPhases]string{"start", "listing", "adding", "snapshot", "keeping", "packing"}

// phaseOf is the phase a progress step begins, or -1 for one that does
// not change it.
func phaseOf(step string) savePhase {
	switch {
	case step == "listing changes":
		return phaseList
	case strings.HasPrefix(step, "adding "), strings.HasPrefix(step, "added "), strings.HasPrefix(step, "update-index failed"):
		return phaseAdd
	case step == "writing the snapshot":
		return phaseSnapshot
	case strings.HasPrefix(step, "keeping the snapshot"):
		return phaseKeep
	case strings.HasPrefix(step, "packing"):
		return phasePack
	}
	return -1
}

// enter ends the phase the save was in and begins p.
func (w *saveStderr) enter(p savePhase, now time.Time) {
	if w.since.IsZero() {
		w.since = now
	}
	w.times[w.cur] += now.Sub(w.since)
	w.cur, w.since = p, now
}

// phases says how long each phase in the VM took, for the log:
// "listing 1.2s, adding 40s, …"; the phase under way ends now.
func (w *saveStderr) phases(now time.Time) string {
	w.enter(w.cur, now)
	var b strings.Builder
	for p, d := range w.times {
		if d == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", phaseNames[p], d.Round(10*time.Millisecond))
	}
	return b.String()
}

// maxStderrLine bounds a line saveStderr holds while it is incomplete.
const maxStderrLine = 4096

func (w *saveStderr) Write(p []byte) (int, error) {
	w.progress()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			room := maxStderrLine - len(w.partial)
			w.partial = append(w.partial, p[:min(room, len(p))]...)
			break
		}
		line := append(w.partial, p[:i]...)
		w.partial = w.partial[:0]
		w.line(string(line), p[i] == '\r')
		p = p[i+1:]
	}
	return n, nil
}

func (w *saveStderr) line(l string, cr bool) {
	switch {
	case strings.HasPrefix(l, "sandbar-save: progress "):
		w.step = strings.TrimPrefix(l, "sandbar-save: progress ")
		if n, ok := strings.CutPrefix(w.step, "adding "); ok {
			n, _, _ = strings.Cut(n, " ")
			if v, err := strconv.Atoi(n); err == nil && v >= 0 {
				w.paths = v
			}
		}
	case cr || strings.HasSuffix(l, ", done.") || strings.HasPrefix(l, "Total "):
		if l == "" {
			return
		}
		w.step = "git: " + l
	case l != "":
		w.kept.Write([]byte(l + "\n"))
		return
	default:
		return
	}
	if p := phaseOf(w.step); p >= 0 && p != w.cur {
		w.enter(p, time.Now())
	}
}

// lastStep is the step the save last reported, escaped for a message.
func (w *saveStderr) lastStep() string {
	if w.step == "" {
		return "none reported"
	}
	return strconv.Quote(w.step)
}

// String is the text kept for a person.
func (w *saveStderr) String() string { return w.kept.String() + string(w.partial) }

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
