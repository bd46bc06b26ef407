package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
	"sandbar/app/session"
	sbwidget "sandbar/app/ui/widget"
)

// tabEnvironment names the Environment tab of Project Settings.
const tabEnvironment = "Environment"

// envListMax bounds the features and the commands listed: a file may
// name thousands.
const envListMax = 40

// envPane is the Environment tab of Project Settings: where the
// project's environment comes from (the repository's devcontainer.json,
// its image, features and commands), whether the person trusted it, and
// its prepared environment: ready, being prepared (a bar and the live
// log) or failed (why, and the log). Rebuild prepares it again; the sudo
// setting is the project's. Everything from the file is the
// repository's text, shown as plain text, clipped.
type envPane struct {
	u         *UI
	ref       string // the project's path
	projectID int64
	box       *fyne.Container

	heading *widget.Label // the one line New Session shows too
	source  *fyne.Container
	trust   *widget.Label
	review  *widget.Button // opens the Trust tab
	state   *widget.Label
	bar     *widget.ProgressBarInfinite
	serving *widget.Label
	problem *widget.Label // why the newest preparation failed
	rebuild *widget.Button
	showLog *widget.Button
	sudo    *widget.Check
	status  *widget.Label
	center  *fyne.Container // the details, and under them the log when shown
	details fyne.CanvasObject
	// detailBox is laid out again after each reading: what it shows
	// and hides changes.
	detailBox *fyne.Container

	logView *sbwidget.LogView
	logOn   bool   // the person asked for the log (or it is being prepared)
	logPath string // the log followed now
	logStop context.CancelFunc
	autoLog string // the preparation whose log was shown by itself

	view      session.EnvironmentView
	loaded    bool
	sudoKnown bool
	settingSu bool
	watch     *envWatch
	// openTrust selects the Trust tab.
	openTrust func()
	now       func() time.Time
}

func newEnvPane(u *UI, ref string, projectID int64, openTrust func()) *envPane {
	p := &envPane{u: u, ref: ref, projectID: projectID, openTrust: openTrust, now: time.Now}
	p.heading = widget.NewLabelWithStyle("Reading the project's environment…", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	p.heading.Wrapping = fyne.TextWrapWord
	p.source = container.NewVBox()
	p.trust = note("")
	p.review = widget.NewButtonWithIcon("Review in the Trust tab", theme.ConfirmIcon(), func() {
		if p.openTrust != nil {
			p.openTrust()
		}
	})
	p.review.Hide()
	p.state = widget.NewLabel("")
	p.state.Wrapping = fyne.TextWrapWord
	p.bar = widget.NewProgressBarInfinite()
	p.bar.Stop()
	p.bar.Hide()
	p.serving = note("")
	p.serving.Hide()
	p.problem = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	p.problem.Wrapping = fyne.TextWrapWord
	p.problem.Importance = widget.DangerImportance
	p.problem.Hide()
	p.rebuild = widget.NewButtonWithIcon("Rebuild", theme.ViewRefreshIcon(), p.doRebuild)
	p.rebuild.Disable()
	p.showLog = widget.NewButtonWithIcon("Show log", theme.FileTextIcon(), p.toggleLog)
	p.showLog.Disable()
	p.sudo = widget.NewCheck("The agent may use sudo inside its VM", p.sudoChanged)
	p.sudo.Disable()
	p.status = statusLabel()
	p.logView = sbwidget.NewLogView(envLogLines, "the whole log is in the file named above")
	p.logView.Post = u.post

	sudoNote := note("On by default: the VM is the boundary, and root inside it reaches nothing of this computer's. Sessions get a change when their agent next starts; Sandbar's own image has apt, so the agent can install what the project needs.")
	// The state first: with the log shown below, it is what stays in
	// sight; then what the file asks for, and the sudo setting.
	p.detailBox = container.NewVBox(
		p.heading,
		p.state, p.bar, p.problem, p.serving,
		widget.NewSeparator(),
		heading("What the repository asks for"),
		p.source,
		container.NewBorder(nil, nil, nil, p.review, p.trust),
		widget.NewSeparator(),
		p.sudo, sudoNote,
	)
	p.details = container.NewVScroll(p.detailBox)
	p.center = container.NewStack(p.details)
	p.box = container.NewBorder(
		note("Sessions of this project run in the environment the repository's devcontainer.json asks for, once you trust it, else in Sandbar's own Debian image. "+
			"Its features and creation commands run once, in the background, into a prepared environment every session starts on."),
		container.NewVBox(container.NewHBox(layout.NewSpacer(), p.showLog, p.rebuild), p.status),
		nil, nil, p.center)
	return p
}

// start reads the environment now and follows it until stop.
func (p *envPane) start() {
	if p.watch == nil {
		p.watch = p.u.watchEnv(p.ref, p.show)
	}
	p.u.background(func(ctx context.Context) {
		on, err := p.u.Backend.ProjectSudo(ctx, p.projectID)
		p.u.post(func() {
			if err != nil {
				setStatus(p.status, widget.DangerImportance, "Cannot read the sudo setting: "+sentence(err.Error()))
				return
			}
			p.settingSu = true
			p.sudo.SetChecked(on)
			p.settingSu = false
			p.sudoKnown = true
			p.sudo.Enable()
		})
	})
}

// stop ends the reading and the log's following (the window closed).
func (p *envPane) stop() {
	if p.watch != nil {
		p.watch.Stop()
	}
	p.stopLog()
	p.logView.Close()
	p.bar.Stop()
}

// show lays out one reading of the environment.
func (p *envPane) show(v session.EnvironmentView, err error) {
	if err != nil {
		setStatus(p.status, widget.DangerImportance, "Cannot read the project's environment: "+sentence(err.Error()))
		return
	}
	p.view, p.loaded = v, true
	now := p.now()
	line, imp := envLineWords(v, now)
	p.heading.SetText("Environment: " + line)
	p.heading.Importance = imp
	p.heading.Refresh()
	p.showSource(v)
	p.showTrust(v)
	p.showPrepared(v, now)
	p.detailBox.Refresh()
}

// showSource lists what the file asks for.
func (p *envPane) showSource(v session.EnvironmentView) {
	p.source.RemoveAll()
	add := func(text string, imp widget.Importance) {
		l := widget.NewLabel(text)
		l.Wrapping = fyne.TextWrapWord
		l.Importance = imp
		p.source.Add(l)
	}
	if v.File == "" {
		add("The repository has no .devcontainer/devcontainer.json (nor .devcontainer.json): sessions start on Sandbar's own Debian image, with sudo, apt and build-essential.", widget.LowImportance)
		return
	}
	add("File: "+envText(v.File), widget.MediumImportance)
	if v.Error != "" {
		for _, l := range splitLines(v.Error, 8) {
			add(envText(l), widget.DangerImportance)
		}
		return
	}
	switch {
	case v.Image == "":
		add("Image: Sandbar's own", widget.MediumImportance)
	case v.Pulled != nil:
		add(fmt.Sprintf("Image: %s (pulled %s: %s, %s, %s)", envText(v.Image), ageWords(p.now(), v.Pulled.Pulled), shortDigest(v.Pulled.Digest), envText(v.Pulled.Platform), doctor.HumanBytes(v.Pulled.Size)), widget.MediumImportance)
	default:
		add("Image: "+envText(v.Image)+" (not on this machine yet: Rebuild, or the first session, pulls it)", widget.MediumImportance)
	}
	if len(v.Features) > 0 {
		fs := make([]string, 0, min(len(v.Features), envListMax))
		for _, f := range v.Features[:min(len(v.Features), envListMax)] {
			fs = append(fs, envText(f))
		}
		add("Features: "+listSome(fs, envListMax)+moreWords(len(v.Features)-envListMax), widget.MediumImportance)
	}
	n := 0
	for _, c := range v.Commands {
		for _, r := range c.Runs {
			if n == envListMax {
				add("… and more commands: sandbar env lists them all", widget.LowImportance)
				goto notes
			}
			n++
			add(fmt.Sprintf("%s (%s): %s", c.Name, c.When, envText(r)), widget.MediumImportance)
		}
	}
notes:
	for i, nt := range v.Notes {
		if i == envListMax {
			break
		}
		add(envText(nt), widget.WarningImportance)
	}
}

// showTrust says whether the file is used, with the way to trust it.
func (p *envPane) showTrust(v session.EnvironmentView) {
	switch {
	case v.File == "":
		p.trust.SetText("")
		p.trust.Hide()
		p.review.Hide()
		return
	case v.Trust == session.TrustTrusted:
		p.trust.SetText("Trusted: sessions use this content. A change to the file needs your trust again (the Trust tab).")
		p.trust.Importance = widget.LowImportance
		p.review.Hide()
	default:
		p.trust.SetText("The file is " + session.TrustStateWords(v.Trust) + ": sessions start on Sandbar's own image until you trust it. Nothing is pulled or built before.")
		p.trust.Importance = widget.WarningImportance
		p.review.Show()
	}
	p.trust.Show()
	p.trust.Refresh()
}

// showPrepared shows the prepared environment's state, the bar while
// it is prepared, and follows its log when that is shown.
func (p *envPane) showPrepared(v session.EnvironmentView, now time.Time) {
	pv := v.Prepared
	preparing := pv != nil && pv.State == session.PrepPreparing
	p.problem.Hide()
	p.serving.Hide()
	if preparing {
		p.bar.Show()
		p.bar.Start()
	} else {
		p.bar.Stop()
		p.bar.Hide()
	}
	switch {
	case pv == nil && v.Source == "devcontainer":
		p.state.SetText("Nothing to prepare: the file has no features and no creation commands, so sessions start on its image as it is.")
	case pv == nil && v.File != "" && v.Error == "":
		p.state.SetText("Nothing is prepared until you trust the file.")
	case pv == nil:
		p.state.SetText("Nothing to prepare: sessions start on Sandbar's own image.")
	case pv.State == session.PrepPreparing:
		p.state.SetText(fmt.Sprintf("Preparing since %s, on commit %s: %s…", pv.Started.Local().Format("15:04:05"), shortCommit(pv.Commit), envText(pv.Step)))
	case pv.State == session.PrepReady && pv.Serving != nil:
		p.state.SetText("Ready: " + servingWords(pv.Serving, now))
	case pv.State == session.PrepFailed:
		p.state.SetText(fmt.Sprintf("Failed on commit %s (%s):", shortCommit(pv.Commit), ageWords(now, pv.Made)))
		p.problem.SetText(failureText(pv.Error))
		p.problem.Show()
	default:
		p.state.SetText("Not prepared yet: the first session prepares it, once, and waits for it; Rebuild prepares it now.")
	}
	if pv != nil && pv.State != session.PrepReady {
		switch {
		case pv.Serving != nil:
			p.serving.SetText("Sessions start on the last good one: " + servingWords(pv.Serving, now))
			p.serving.Importance = widget.LowImportance
			p.serving.Show()
		case pv.State == session.PrepFailed:
			p.serving.SetText("None is ready: the project's sessions fail until it is fixed. New Session can start one in Sandbar's own image instead.")
			p.serving.Importance = widget.WarningImportance
			p.serving.Show()
		}
	}
	p.state.Importance = widget.MediumImportance
	if pv != nil && pv.State == session.PrepFailed {
		p.state.Importance = widget.DangerImportance
	}
	p.state.Refresh()
	setEnabled(p.rebuild, pv != nil && !preparing)
	hasLog := pv != nil && pv.Log != ""
	setEnabled(p.showLog, hasLog)
	if preparing && p.autoLog != pv.Key+pv.Started.String() {
		// A preparation under way shows its log live, once: hidden by
		// the person, it stays hidden.
		p.autoLog = pv.Key + pv.Started.String()
		p.logOn = true
	}
	p.followLogIf(pv)
}

// servingWords describes the environment sessions boot on.
func servingWords(s *session.PreparedEnv, now time.Time) string {
	return fmt.Sprintf("prepared %s (%s) on commit %s, %s on disk, %s to prepare (%s of it the file's own commands); last used %s.",
		ageWords(now, s.Made), s.Made.Local().Format("2006-01-02 15:04"), shortCommit(s.Commit), doctor.HumanBytes(s.Size),
		s.Took.Round(time.Second), s.SetupTook.Round(time.Second), ageWords(now, s.LastUse))
}

// failureText is why a preparation failed, the log's tail with it: its
// lines made visible, at most a screenful.
func failureText(e string) string {
	lines := splitLines(e, 20)
	for i, l := range lines {
		lines[i] = sbwidget.ClipRunes(displayLine(l), envTextMax)
	}
	return strings.Join(lines, "\n")
}

// followLogIf follows the newest preparation's log into the log view
// while the log is shown.
func (p *envPane) followLogIf(pv *session.PreparedView) {
	if !p.logOn || pv == nil || pv.Log == "" {
		p.showLog.SetText("Show log")
		p.center.Objects = []fyne.CanvasObject{p.details}
		p.center.Refresh()
		return
	}
	p.showLog.SetText("Hide log")
	if len(p.center.Objects) == 1 && p.center.Objects[0] == p.details {
		split := container.NewVSplit(p.details, p.logView)
		split.Offset = 0.45
		p.center.Objects = []fyne.CanvasObject{split}
		p.center.Refresh()
	}
	if pv.Log == p.logPath {
		return
	}
	// A new preparation, or the one followed has finished and its
	// folder moved into place: read the file where it is now, whole
	// (the open file would have followed it, but the preparation may
	// have ended before it was opened).
	p.stopLog()
	p.logView.Clear()
	p.logPath = pv.Log
	path, view := pv.Log, p.logView
	p.logStop = p.u.goUntil(func(ctx context.Context) { followLog(ctx, path, view) })
}

func (p *envPane) stopLog() {
	if p.logStop != nil {
		p.logStop()
		p.logStop = nil
	}
	p.logPath = ""
}

// toggleLog shows or hides the newest preparation's log.
func (p *envPane) toggleLog() {
	p.logOn = !p.logOn
	if !p.logOn {
		p.stopLog()
	}
	p.followLogIf(p.view.Prepared)
}

// doRebuild starts a preparation (or joins the one under way) in the
// engine, which pulls and fetches first: seconds, off the UI goroutine.
func (p *envPane) doRebuild() {
	p.rebuild.Disable()
	setStatus(p.status, widget.MediumImportance, "Starting the preparation (pulling the image and fetching the features first)…")
	p.u.background(func(ctx context.Context) {
		pv, err := p.u.Backend.PrepareEnvironment(ctx, p.ref, true)
		p.u.post(func() {
			if err != nil {
				setStatus(p.status, widget.DangerImportance, "Not started: "+sentence(err.Error()))
				setEnabled(p.rebuild, p.view.Prepared != nil && p.view.Prepared.State != session.PrepPreparing)
				return
			}
			msg := "Preparing: sessions started meanwhile use the last good one, or wait for this one if there is none."
			if pv.State == session.PrepReady {
				msg = "Ready."
			}
			setStatus(p.status, widget.SuccessImportance, msg)
			p.logOn = true
			if p.watch != nil {
				p.watch.Kick()
			}
		})
	})
}

// sudoChanged saves the sudo setting as it is ticked.
func (p *envPane) sudoChanged(on bool) {
	if p.settingSu || !p.sudoKnown {
		return
	}
	p.sudo.Disable()
	p.u.background(func(ctx context.Context) {
		err := p.u.Backend.SetProjectSudo(ctx, p.ref, on)
		p.u.post(func() {
			p.sudo.Enable()
			if err != nil {
				p.settingSu = true
				p.sudo.SetChecked(!on)
				p.settingSu = false
				setStatus(p.status, widget.DangerImportance, "Not saved: "+sentence(err.Error()))
				return
			}
			what := "may use sudo inside their VMs"
			if !on {
				what = "may not use sudo"
			}
			setStatus(p.status, widget.SuccessImportance, "Saved: the agents of this project's sessions "+what+", from their agent's next start.")
		})
	})
}

func shortDigest(d string) string {
	const prefix = "sha256:"
	if len(d) > len(prefix)+12 && d[:len(prefix)] == prefix {
		return d[:len(prefix)+12]
	}
	return d
}

func moreWords(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" and %d more", n)
}

// splitLines is s's first n lines, and a line saying how many more.
func splitLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		more := len(lines) - n
		lines = append(lines[:n:n], fmt.Sprintf("… and %d more lines: Show log has them", more))
	}
	return lines
}

// selectTabNamed selects the tab titled name, if there is one.
func selectTabNamed(tabs *container.AppTabs, name string) bool {
	for i, it := range tabs.Items {
		if it.Text == name {
			tabs.SelectIndex(i)
			return true
		}
	}
	return false
}

// showProjectEnvironment opens a project's settings at its Environment
// tab.
func (u *UI) showProjectEnvironment(id int64) {
	w := u.showProjectSettings(id)
	if !selectTabNamed(w.tabs, tabEnvironment) {
		w.wantEnv = true
	}
}
