package ui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/store"
)

const (
	agentClaude = "Claude Code"
	agentCustom = "Custom command"
	maxDiskGiB  = 1024
)

// newSessionWindow is the New Session dialog: project, base branch,
// prompt, agent and limits, checked as they are typed; Start hands them
// to the backend off the UI goroutine.
type newSessionWindow struct {
	u   *UI
	win fyne.Window

	projects    []store.Project
	project     *closeSelect
	projectPath *widget.Label
	base        *selectEntry // the project's branches to pick from
	baseEdited  bool
	settingBase bool
	branchesOf  int64 // the project whose branches base offers
	prompt      *entry
	agent       *closeSelect
	command     *entry
	commandSet  bool // the person typed in command: an empty one is then wrong
	settingCmd  bool
	cpus        *closeSlider
	cpusLabel   *widget.Label
	memory      *closeSelect // steps of 1, 2, 4… GiB (newsession_memory.go)
	memorySteps []int        // MiB, as memory lists them
	memoryWant  int          // MiB: the default, kept as the budget changes
	memoryHint  *widget.Label
	disk        *entry
	network     *closeSelect // the egress mode: Allowlist, Open, Off
	networkHint *widget.Label
	netEdited   bool // the person chose a mode: it is the session's own
	settingNet  bool
	netDefault  policy.Mode // what the settings give the selected project
	netFrom     string      // whose settings say so
	timeout     *entry
	problems    *widget.Label // hidden while there is none
	scroll      *container.Scroll
	limitsHead  *widget.Label
	status      *widget.Label
	keyBox      *fyne.Container // the way to the Anthropic key, after Start failed for want of it
	addKey      *widget.Button
	apiFix      *widget.Button // turns the network on and starts again (newsession_health.go)
	envLine     *widget.Label  // the chosen project's environment (newsession_env.go)
	envDefault  *widget.Check  // this session in Sandbar's own image
	envSettings *widget.Button
	envWatch    *envWatch
	envOf       int64 // the project whose environment is shown
	start       *widget.Button

	loaded      bool
	budget      session.Budget
	budgetErr   error
	hostCPUs    int
	wantProject int64
	starting    bool
}

// newSessionDefaults is what the window loads when it opens.
type newSessionDefaults struct {
	projects  []store.Project
	budget    session.Budget
	budgetErr error
	cpus      int
	memoryMiB int
	diskGiB   int
	agent     string // default agent command; "": Claude Code
}

func newNewSessionWindow(u *UI) *newSessionWindow {
	w := &newSessionWindow{u: u, win: u.App.NewWindow("New Session"), hostCPUs: max(u.Backend.HostCPUs(), 1)}

	w.project = newSelect(nil, func(string) { w.projectChanged() })
	w.project.PlaceHolder = "Loading projects…"
	w.projectPath = widget.NewLabel("")
	w.projectPath.Importance = widget.LowImportance
	w.projectPath.SizeName = theme.SizeNameCaptionText
	w.projectPath.Truncation = fyne.TextTruncateEllipsis

	w.base = newSelectEntry(nil)
	w.base.SetPlaceHolder("the repository's current branch")
	w.base.OnChanged = func(string) {
		if !w.settingBase {
			w.baseEdited = true
		}
		w.validate()
	}
	w.prompt = newMultiLineEntry()
	w.prompt.SetPlaceHolder("What should the agent do? e.g. make the tests pass (" + submitKeysName() + " starts)")
	w.prompt.Wrapping = fyne.TextWrapWord
	w.prompt.SetMinRowsVisible(4)
	// Enter starts a new line of the prompt; Ctrl+Enter (Cmd+Enter)
	// starts the session, from any field (submitOnKeys below).
	w.prompt.OnSubmitted = func(string) { w.submit() }

	w.command = newEntry()
	w.command.SetPlaceHolder("a shell command, run in /workspace: e.g. make test")
	w.command.OnChanged = func(string) {
		if !w.settingCmd {
			w.commandSet = true
		}
		w.validate()
	}
	w.agent = newSelect([]string{agentClaude, agentCustom}, func(string) { w.agentChanged() })

	w.cpus = newSlider(1, float64(w.hostCPUs))
	w.cpusLabel = widget.NewLabel(fmt.Sprintf("%d of %d", w.hostCPUs, w.hostCPUs))
	w.cpus.OnChanged = func(float64) { w.validate() }
	if w.hostCPUs == 1 {
		w.cpus.Disable()
	}
	w.memory = newSelect(nil, func(string) { w.validate() })
	w.memory.PlaceHolder = "Loading…"
	w.memoryHint = widget.NewLabel("")
	w.memoryHint.Truncation = fyne.TextTruncateEllipsis
	w.disk = newEntry()
	w.disk.OnChanged = func(string) { w.validate() }
	w.network = newSelect([]string{modeName(policy.ModeAllowlist), modeName(policy.ModeOpen), modeName(policy.ModeOff)}, func(string) {
		if !w.settingNet {
			w.netEdited = true
		}
		w.networkChanged()
	})
	w.netDefault, w.netFrom = policy.ModeAllowlist, "the default"
	w.setNetwork(policy.ModeAllowlist)
	w.networkHint = note("")
	w.networkHint.Importance = widget.MediumImportance
	w.networkChanged()
	w.timeout = newEntry()
	w.timeout.SetPlaceHolder("none")
	w.timeout.OnChanged = func(string) { w.validate() }

	w.problems = widget.NewLabel("")
	w.problems.Importance = widget.DangerImportance
	w.problems.Wrapping = fyne.TextWrapWord
	w.status = widget.NewLabel("")
	w.status.Wrapping = fyne.TextWrapWord
	w.status.Hide()
	w.keyBox, w.addKey = newMissingKey(u)
	w.apiFix = w.newAPIFix()

	w.start = widget.NewButtonWithIcon("Start", theme.MediaPlayIcon(), w.submit)
	w.start.Importance = widget.HighImportance
	w.start.Disable()
	cancel := widget.NewButton("Cancel", func() { w.win.Close() })

	small := func(o fyne.CanvasObject) fyne.CanvasObject {
		return container.NewGridWrap(fyne.NewSize(110, o.MinSize().Height), o)
	}
	w.limitsHead = heading("Limits")
	limits := container.New(layout.NewFormLayout(),
		widget.NewLabel("vCPUs"), container.NewBorder(nil, nil, nil, w.cpusLabel, w.cpus),
		widget.NewLabel("Memory"), container.NewBorder(nil, nil, w.memory.fixedWidth("16 GiB", "512 MiB", "none free", "Loading…"), nil, w.memoryHint),
		widget.NewLabel("Disk"), container.NewHBox(small(w.disk), widget.NewLabel("GiB scratch (sparse: takes only what is written)")),
		widget.NewLabel("Timeout"), container.NewHBox(small(w.timeout), widget.NewLabel("e.g. 45m or 2h; empty for none")),
		widget.NewLabel("Network"), container.NewVBox(container.NewHBox(w.network.fixedWidth(w.network.Options...)), w.networkHint),
	)
	form := container.New(layout.NewFormLayout(),
		widget.NewLabel("Project"), container.NewVBox(w.project, w.projectPath),
		widget.NewLabel("Base branch"), w.base,
		widget.NewLabel("Prompt"), w.prompt,
		widget.NewLabel("Agent"), container.NewVBox(container.NewHBox(w.agent.fixedWidth(w.agent.Options...)), w.command),
		widget.NewLabel("Environment"), w.buildEnv(),
	)
	// The fields scroll inside the window, which keeps the size it opened
	// at (winframe.go); what is wrong, and Start, stay below them, so no
	// field moves when a problem shows.
	fields := container.NewVBox(form, widget.NewSeparator(), w.limitsHead, limits)
	buttons := container.NewHBox(layout.NewSpacer(), cancel, w.start)
	footer := container.NewVBox(widget.NewSeparator(), w.problems, w.status, w.keyBox, w.apiFix, buttons)
	w.scroll = container.NewVScroll(container.NewPadded(fields))
	w.win.SetContent(container.NewPadded(container.NewBorder(nil, footer, nil, nil, w.scroll)))
	submitOnKeys(w.win, w.submit)
	// It opens big enough for every field, the custom command's
	// included (shown until an agent is chosen), and no problem: the
	// paddings are the window's, the content's, the form's and the gap
	// above the footer.
	w.problems.Hide()
	w.win.Resize(fyne.NewSize(620, fields.MinSize().Height+footer.MinSize().Height+8*theme.Padding()))
	w.win.SetOnClosed(func() {
		if u.newSessWin == w {
			u.newSessWin = nil
		}
		w.stopEnv()
	})
	w.load()
	return w
}

// load reads the projects, the memory budget and the default limits off
// the UI goroutine, then fills the window.
func (w *newSessionWindow) load() {
	u := w.u
	u.background(func(ctx context.Context) {
		var d newSessionDefaults
		d.projects, _ = u.Backend.Projects(ctx)
		d.budget, d.budgetErr = u.Backend.Budget(ctx)
		d.cpus, d.memoryMiB, d.diskGiB = session.DefaultCPUs, session.DefaultMemoryMiB, session.DefaultDiskGiB
		if s := u.Settings; s != nil {
			d.cpus = intSetting(ctx, s, KeyDefaultCPUs, d.cpus)
			d.memoryMiB = intSetting(ctx, s, KeyDefaultMemoryMiB, d.memoryMiB)
			d.diskGiB = intSetting(ctx, s, KeyDefaultDiskGiB, d.diskGiB)
			if v, ok, _ := s.Setting(ctx, KeyDefaultAgent); ok {
				d.agent = strings.TrimSpace(v)
			}
		}
		u.post(func() { w.fill(d) })
	})
}

// intSetting reads a positive integer setting, or def.
func intSetting(ctx context.Context, s SettingsBackend, key string, def int) int {
	v, ok, err := s.Setting(ctx, key)
	if err != nil || !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return def
	}
	return n
}

func (w *newSessionWindow) fill(d newSessionDefaults) {
	w.projects = d.projects
	w.budget, w.budgetErr = d.budget, d.budgetErr
	var names []string
	for _, p := range d.projects {
		names = append(names, w.projectLabel(p))
	}
	w.project.SetOptions(names)
	w.project.PlaceHolder = "Choose a project"
	if len(names) == 0 {
		w.project.PlaceHolder = "No projects yet"
	}
	w.cpus.SetValue(float64(min(max(d.cpus, 1), w.hostCPUs)))
	w.memoryWant = d.memoryMiB
	w.setMemorySteps(d.memoryMiB)
	w.disk.SetText(strconv.Itoa(d.diskGiB))
	if d.agent != "" {
		w.settingCmd = true
		w.command.SetText(d.agent)
		w.settingCmd = false
		w.agent.SetSelected(agentCustom)
	} else {
		w.agent.SetSelected(agentClaude)
	}
	w.loaded = true
	if !w.pick(w.wantProject) {
		w.pick(0)
	}
	w.agentChanged()
	w.validate()
}

// projectLabel names a project in the select; names that repeat get
// their path.
func (w *newSessionWindow) projectLabel(p store.Project) string {
	n := 0
	for _, q := range w.projects {
		if q.Name == p.Name {
			n++
		}
	}
	if n > 1 {
		return p.Name + " (" + tildePath(p.Path, w.u.Home) + ")"
	}
	return p.Name
}

// selectProject selects the project with id (0: the most recently used,
// which the backend lists first). A project added since the window
// opened makes it read the projects again.
func (w *newSessionWindow) selectProject(id int64) {
	if !w.loaded {
		w.wantProject = id
		return
	}
	if !w.pick(id) {
		w.loaded, w.wantProject = false, id
		w.load()
	}
}

// pick selects the project with id (0: the first); false if there is
// none such.
func (w *newSessionWindow) pick(id int64) bool {
	for i, p := range w.projects {
		if p.ID == id || id == 0 {
			w.project.SetSelectedIndex(i)
			return true
		}
	}
	return id == 0
}

func (w *newSessionWindow) selected() (store.Project, bool) {
	i := w.project.SelectedIndex()
	if i < 0 || i >= len(w.projects) {
		return store.Project{}, false
	}
	return w.projects[i], true
}

func (w *newSessionWindow) projectChanged() {
	p, ok := w.selected()
	if !ok {
		w.projectPath.SetText("")
		w.validate()
		return
	}
	w.projectPath.SetText(tildePath(p.Path, w.u.Home))
	w.loadNetworkDefault(p)
	if p.ID != w.envOf {
		w.watchProjectEnv(p)
	}
	if !w.baseEdited {
		w.setBase(p.DefaultBranch)
	}
	w.loadBranches(p)
	w.validate()
}

func (w *newSessionWindow) agentChanged() {
	if w.agent.Selected == agentCustom {
		w.command.Show()
	} else {
		w.command.Hide()
	}
	w.validate()
}

// submit starts the session off the UI goroutine; the backend's error,
// if any, is shown under the form and nothing is lost of what was typed.
func (w *newSessionWindow) submit() {
	o, problems := w.options()
	if len(problems) > 0 || w.starting {
		return
	}
	w.starting = true
	w.start.Disable()
	w.keyBox.Hide()
	w.status.Importance = widget.MediumImportance
	w.status.SetText("Starting…")
	w.status.Show()
	w.apiFix.Hide()
	u := w.u
	u.background(func(ctx context.Context) {
		s, err := u.Backend.Start(ctx, o)
		var b session.Budget
		var berr error
		if err != nil {
			b, berr = u.Backend.Budget(ctx)
		}
		u.post(func() {
			w.starting = false
			if err != nil {
				w.status.Importance = widget.DangerImportance
				w.status.SetText(sentence(err.Error()))
				if errors.Is(err, session.ErrNoCredentials) {
					w.showMissingKey()
				} else {
					w.offerAPIFix(err, o)
				}
				w.budget, w.budgetErr = b, berr
				// What is free may have changed: the choice stays, or
				// the nearest step below it that still fits.
				want := w.memoryMiB()
				if want == 0 {
					want = w.memoryWant
				}
				w.setMemorySteps(want)
				w.validate()
				return
			}
			w.win.Close()
			if u.OpenSession != nil {
				u.openSession(s.ID)
			}
		})
	})
}
