package ui

import (
	"context"
	"fmt"
	"image/color"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/readable"
	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// Tab names of the session window.
const (
	tabTranscript = "Transcript"
	tabLog        = "Log"
	tabChanges    = "Changes"
	tabExec       = "Exec"
	tabResources  = "Resources"
)

// ShowSession opens the window of session id, or brings it forward when
// it is open already.
func (u *UI) ShowSession(id string) { u.showSession(id) }

// sessionWindowTitle names a session's window: its title, and the
// project it works on.
func sessionWindowTitle(title, project string) string {
	return title + " — " + project
}

func (u *UI) showSession(id string) *sessionWindow {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	s, err := u.Backend.Get(ctx, id)
	var p store.Project
	if err == nil {
		p, err = u.Backend.Project(ctx, s.ProjectID)
	}
	// The agent log's file, for "Open the full log"; without it the view
	// only says how many lines it no longer holds.
	agentLog := ""
	if err == nil {
		agentLog, _ = u.Backend.AgentLog(ctx, s.ID)
	}
	cancel()
	if err != nil {
		w := u.App.NewWindow("Sandbar session")
		msg := widget.NewLabel(fmt.Sprintf("Session %s cannot be shown: %v", id, err))
		msg.Wrapping = fyne.TextWrapWord
		w.SetContent(container.NewPadded(msg))
		w.Resize(fyne.NewSize(420, 140))
		closeOnKeys(w)
		w.Show()
		return nil
	}
	if w := u.sessionWins[s.ID]; w != nil && !w.closed {
		w.win.Show()
		w.win.RequestFocus()
		return nil
	}
	w := buildSessionWindow(u, s, p, agentLog)
	u.frameWindow(w.win, winSession, fyne.NewSize(1100, 740))
	if u.sessionWins == nil {
		u.sessionWins = map[string]*sessionWindow{}
	}
	u.sessionWins[s.ID] = w
	w.win.Show()
	w.start()
	if s.State == session.StateSuspended {
		w.doResume() // opening a suspended session brings it back
	}
	return w
}

// sessionWindow is one session's window. Its fields belong to the UI
// goroutine; its goroutines (events, uptime, actions, exec) end when the
// window closes.
type sessionWindow struct {
	u       *UI
	id      string
	win     fyne.Window
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	sess    store.Session
	project store.Project
	closed  bool
	// post runs a function on the UI goroutine (the UI's post).
	post func(func())
	// launcher starts an opener's command (tests replace it);
	// startDetached when nil.
	launcher func(*exec.Cmd) error

	name    *widget.Label // the session's title
	where   *readAllLabel // its project and branch
	title   *titleEditor
	dot     *canvas.Circle
	state   *readAllLabel // why it is in its state: clicked, said whole
	uptime  *widget.Label
	stop    *widget.Button
	restart *widget.Button
	// resume shows while the session's VM is paused on a full disk.
	resume  *widget.Button
	merge   *widget.Button
	del     *widget.Button
	openers []*openerButton
	running bool // the session's VM runs: the Terminal can open
	openMsg *readAllLabel
	// envWait shows while the session waits for its project's prepared
	// environment (sessionwin_envwait.go).
	envWait    *fyne.Container
	envWaitBar *widget.ProgressBarInfinite

	// branch creates the session's branch in the repository, merge
	// merges into its current branch; mergeNote says why they are off,
	// and where the work went (see sessionwin_merge.go).
	branch    *widget.Button
	mergeNote *readAllLabel
	target    session.MergeTarget
	merging   bool // a merge is in flight
	gone      bool // the session was deleted
	// targetGen numbers MergeTarget reads: only the latest one's answer
	// is shown.
	targetGen atomic.Int64

	// exportDir and exported are the read-only copy last made and when
	// the work it holds was saved; "" before one is made.
	exportDir string
	exported  time.Time
	// exportOpeners are the workspace openers for a folder: made again
	// for the export's folder once the backend has written it.
	exportOpeners func(dir string) []opener
	notice        *noticeBar

	tabs       *container.AppTabs
	logs       *sbwidget.LogView // the raw log; logTab holds it and, for Claude Code, a readable one
	logTab     *logTab
	transcript *sbwidget.TranscriptView
	changes    *changesPanel
	exec       *execConsole
	term       *terminalPanel
	res        *resourcePanel
	net        *netPanel

	chat     *entry
	chatSend *widget.Button
	chatNote *widget.Label
	chatBusy bool
	stopping bool // a Stop is in flight

	interrupt    *widget.Button
	interrupting bool // an Interrupt is in flight

	sync       *syncAction    // Sync with the person's branch (sessionwin_sync.go)
	commitNow  *widget.Button // see sessionwin_commit.go
	committing bool           // a Commit now is in flight
	mergeStash bool           // the merge in flight stashes (Stash, merge, unstash)
}

func buildSessionWindow(u *UI, s store.Session, p store.Project, agentLog string) *sessionWindow {
	w := &sessionWindow{u: u, id: s.ID, sess: s, project: p, post: u.post}
	if w.post == nil {
		w.post = fyne.Do
	}
	parent := u.ctx
	if parent == nil {
		parent = context.Background()
	}
	w.ctx, w.cancel = context.WithCancel(parent)
	w.win = u.App.NewWindow(sessionWindowTitle(session.Title(s), p.Name))

	// Header.
	w.name = widget.NewLabelWithStyle(session.Title(s), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	w.name.SizeName = theme.SizeNameSubHeadingText
	w.name.Truncation = fyne.TextTruncateEllipsis
	w.where = newReadAllLabel()
	w.where.SetText(p.Name + " · " + s.Branch)
	w.where.Importance = widget.LowImportance
	w.title = newTitleEditor(w)
	w.dot = canvas.NewCircle(color.Transparent)
	w.state = newReadAllLabel()
	w.uptime = widget.NewLabel("")
	w.uptime.Importance = widget.LowImportance
	w.interrupt = widget.NewButtonWithIcon("Interrupt", theme.MediaPauseIcon(), w.doInterrupt)
	w.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), w.doStop)
	w.restart = widget.NewButtonWithIcon("Restart", theme.MediaReplayIcon(), w.doRestart)
	w.resume = widget.NewButtonWithIcon("Resume", theme.MediaPlayIcon(), w.doResume)
	w.resume.Importance = widget.HighImportance
	w.resume.Hide()
	w.buildMergeActions()
	w.buildSyncAction()
	w.buildCommitAction()
	w.del = widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), func() { w.doDelete(false) })
	w.del.Importance = widget.DangerImportance
	w.notice = newNoticeBar()
	w.notice.life, w.notice.post = u.bannerLife, w.ui

	dotBox := container.NewGridWrap(fyne.NewSquareSize(theme.Size(theme.SizeNameText)*0.8), w.dot)
	// The state's reason can be long: it truncates, in the room the
	// dot and the uptime leave it.
	stateLine := container.NewBorder(nil, nil, container.NewCenter(dotBox), w.uptime, w.state)
	// Every action is always there, enabled or not, so none moves when
	// the state changes.
	// They have a row of their own, the VM's on the left and the work's
	// on the right: beside the state they left it a third of the width.
	// Resume, which shows only while the disk is full, comes last on its
	// side, and Merge into is as wide as its longest usual label, so
	// that neither moves another button when it changes.
	actions := container.NewBorder(nil, nil,
		container.NewHBox(w.interrupt, w.stop, w.restart, w.resume),
		container.NewHBox(w.commitNow, w.sync.btn, w.branch,
			atLeastAsWide(w.merge, mergeIntoLabel(""), mergeIntoLabel("main"), mergeIntoLabel("master")), w.del))
	// The title has the window's width: beside the actions it was cut
	// to a few letters.
	head := container.NewVBox(w.title.content, w.where, stateLine, w.buildEnvWait(), w.mergeNote, actions)

	w.openMsg = newReadAllLabel()
	w.openMsg.Importance = widget.LowImportance
	openRow := container.NewHBox(widget.NewLabel("Open:"))
	// Nothing opens the agent's own files, which live in its VM: the
	// Terminal is a shell inside the VM (sandbar shell), and the others
	// open a read-only export Sandbar writes from the session's saved
	// work when one is pressed.
	self, _ := os.Executable()
	w.exportOpeners = func(dir string) []opener { return workspaceOpeners(dir, os.Getenv, lookPath) }
	openers := []opener{shellOpener(self, w.id, os.Getenv, lookPath)}
	// Where the export goes, the backend says when it writes it (launch).
	for _, o := range w.exportOpeners("") {
		o.export, o.argv, o.dir = true, nil, ""
		openers = append(openers, o)
	}
	for _, o := range openers {
		b := newOpenerButton(w, o)
		w.openers = append(w.openers, b)
		openRow.Add(b.btn)
	}
	w.showOpenNote()

	// Tabs.
	hint := "see agent.log"
	if agentLog != "" {
		hint = "see " + agentLog
	}
	w.logs = sbwidget.NewLogView(sbwidget.DefaultLogCapacity, hint)
	w.logs.OnClose = func() bool { return closeFrontOf(w.logs) }
	w.logs.Post = w.post
	if agentLog != "" {
		// agent.log holds the newest 64 to 128 MiB (with agent.log.1);
		// the view and the store keep fewer lines.
		if o := fileOpener(agentLog, lookPath); o.missing == "" {
			w.logs.OnOpenOlder = func() { w.launch(o) }
		}
	}
	w.logTab = newLogTab(w.logs, readable.Claude(s.Agent), hint)
	w.transcript = sbwidget.NewTranscriptView()
	if s.Agent.Kind != "claude" {
		w.transcript.SetEmptyText("This session runs a custom agent (" + s.Agent.Command + "), which keeps no transcript: its output is in the Log tab.")
	} else {
		w.transcript.SetEmptyText("No transcript yet: the agent's messages and tool calls show here as it works.")
	}
	w.changes = newChangesPanel(w)
	w.exec = newExecConsole(w)
	w.term = newTerminalPanel(w)
	w.res = newResourcePanel()
	w.res.setSession(s)
	w.net = newNetPanel(w)
	w.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon(tabTranscript, theme.DocumentIcon(), sbwidget.Fit(w.transcript)),
		container.NewTabItemWithIcon(tabLog, theme.ListIcon(), sbwidget.Fit(w.logTab.content)),
		container.NewTabItemWithIcon(tabChanges, theme.DocumentCreateIcon(), sbwidget.Fit(w.changes.content)),
		container.NewTabItemWithIcon(tabTerminal, theme.ComputerIcon(), w.term.content),
		container.NewTabItemWithIcon(tabExec, theme.MediaPlayIcon(), sbwidget.Fit(w.exec.content)),
		container.NewTabItemWithIcon(tabNetwork, theme.UploadIcon(), sbwidget.Fit(w.net.content)),
		container.NewTabItemWithIcon(tabResources, theme.InfoIcon(), sbwidget.Fit(w.res.content)),
	)
	w.tabs.OnSelected = func(t *container.TabItem) {
		switch t.Text {
		case tabNetwork:
			// The counts of allowed connections move without events.
			w.net.reloadSoon()
		case tabTerminal:
			w.term.showTab()
		}
	}
	if s.Agent.Kind != "claude" {
		w.tabs.SelectIndex(1)
	}

	// Chat.
	w.chat = newEntry()
	w.chat.SetPlaceHolder("Message the agent (Enter sends)")
	w.chat.OnSubmitted = func(string) { w.sendChat() }
	w.chatSend = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), w.sendChat)
	w.chatNote = widget.NewLabel("")
	w.chatNote.Wrapping = fyne.TextWrapWord
	w.chatNote.Hide()
	chatRow := container.NewBorder(nil, w.chatNote, nil, w.chatSend, w.chat)

	top := container.NewVBox(head, openRow, w.openMsg, w.notice.box)
	w.win.SetContent(container.NewBorder(top, chatRow, nil, nil, w.tabs))
	w.win.SetOnClosed(w.close)
	w.applySession(s)
	return w
}

// start runs the window's goroutines: events, then the uptime clock.
func (w *sessionWindow) start() {
	w.spawn(w.events)
	w.spawn(w.clock)
	w.spawn(w.refreshMerge)
}

// close ends the window's goroutines: each returns promptly once the
// context is cancelled. It does not wait for them, as it may run in a
// callback that one of them posted; wait does (and so does UI.Close).
func (w *sessionWindow) close() {
	if w.closed {
		return
	}
	w.closed = true
	if w.u.sessionWins[w.id] == w {
		delete(w.u.sessionWins, w.id)
	}
	w.cancel()
	w.logTab.close()
	w.exec.close()
	w.term.close()
	w.envWaitBar.Stop()
}

// wait returns when the window's goroutines have ended.
func (w *sessionWindow) wait() { w.wg.Wait() }

// spawn runs fn off the UI goroutine, owned by the window (and by the
// UI, whose Close waits for it).
func (w *sessionWindow) spawn(fn func(ctx context.Context)) {
	if w.closed || w.ctx.Err() != nil { // the window or the UI closed
		return
	}
	w.u.wg.Add(1)
	w.wg.Add(1)
	go func() {
		defer w.u.wg.Done()
		defer w.wg.Done()
		fn(w.ctx)
	}()
}

// ui runs fn on the UI goroutine unless the window has closed by then.
func (w *sessionWindow) ui(fn func()) {
	w.post(func() {
		if !w.closed {
			fn()
		}
	})
}

// applySession shows the session's state, actions, limits and timings.
func (w *sessionWindow) applySession(s store.Session) {
	if s.State != w.sess.State && s.State != session.StateProvisioning {
		// The watcher reports changes from the agent's start on; what
		// came before (the clone, a restart) is read now.
		w.spawn(w.changes.reload)
	}
	if s.State != w.sess.State || s.Merged != w.sess.Merged {
		w.spawn(w.refreshMerge)
	}
	w.sess = s
	w.showTitle()
	w.showOpenNote()
	w.dot.FillColor = stateDotColor(s.State, s.Activity)
	w.dot.Refresh()
	// Cut to one line in the window; a click shows it whole (the
	// bound only keeps a runaway reason from the dialog).
	w.state.SetText(sbwidget.ClipRunes(stateSentence(s), 4000))
	w.showEnvWait(s)
	w.showUptime()

	live := session.Live(s.State)
	setEnabled(w.stop, live && s.State != session.StateStopping)
	setEnabled(w.interrupt, canInterrupt(s) && !w.interrupting && !w.gone)
	// A stop is done when Stop returns, a moment after the state says
	// stopped: restarting before would be refused.
	// A suspended session resumes where it was; a restart would boot
	// it anew and lose its running processes.
	setEnabled(w.restart, !live && !w.stopping && s.State != session.StateSuspended)
	if s.State == session.StateRunning && s.Activity == session.ActivityPaused || s.State == session.StateSuspended {
		w.resume.Show()
	} else {
		w.resume.Hide()
	}
	w.showMergeTarget()
	w.res.setSession(s)
	w.exec.setRunning(s.State == session.StateRunning)
	w.logTab.setWorking(s.State == session.StateRunning &&
		(s.Activity == session.ActivityWorking || s.Activity == session.ActivityRetrying))
	w.term.setRunning(s.State == session.StateRunning)
	w.net.setSession(s, w.running)
	if running := s.State == session.StateRunning; running != w.running {
		w.running = running
		w.showOpenNote()
	}

	switch {
	case s.State == session.StateRunning:
		w.chat.Enable()
		if !w.chatBusy {
			w.chatSend.Enable()
		}
		if w.chatNote.Importance == widget.LowImportance {
			w.chatNote.Hide()
		}
	default:
		w.chat.Disable()
		w.chatSend.Disable()
		why := "Chat opens once the agent runs."
		if !live {
			why = "This session has ended: restart it to talk to the agent."
		}
		w.chatNote.Importance = widget.LowImportance
		w.chatNote.SetText(why)
		w.chatNote.Show()
	}
	if w.gone {
		w.disableGone()
	}
}

func (w *sessionWindow) showUptime() {
	s := w.sess
	if s.Started.IsZero() {
		w.uptime.SetText("")
		return
	}
	var txt string
	switch {
	case session.Live(s.State):
		txt = "up " + humanDuration(time.Since(s.Started))
	case !s.Ended.IsZero() && s.Ended.After(s.Started):
		txt = "ran " + humanDuration(s.Ended.Sub(s.Started))
	}
	if w.uptime.Text != txt {
		w.uptime.SetText(txt)
	}
}

// removed is the session being deleted (here or elsewhere): it is in the
// trash, and the notice offers Undo.
func (w *sessionWindow) removed() {
	w.gone = true
	w.trashedNotice()
	w.disableGone()
}

// disableGone turns off every action of a deleted session's window: the
// notice's Undo is all it offers. applySession calls it again, since the
// state events of the stop that the delete made may come after it.
func (w *sessionWindow) disableGone() {
	for _, b := range []*widget.Button{w.interrupt, w.resume, w.stop, w.restart, w.commitNow, w.sync.btn, w.branch, w.merge, w.del, w.chatSend, w.title.rename, w.net.publish} {
		b.Disable()
	}
	w.chat.Disable()
	w.showSync()
	for _, o := range w.openers {
		o.btn.Disable()
	}
	w.exec.setRunning(false)
}
