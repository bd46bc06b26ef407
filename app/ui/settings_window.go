package ui

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/vm"
)

// settingsWindow is Settings: secrets, the network, default limits and
// agent, the guest image, storage and launch at login, one tab each.
type settingsWindow struct {
	u    *UI
	win  fyne.Window
	tabs *container.AppTabs
	ub   unbinder

	// Secrets.
	secretNames []string
	secretList  *widget.List
	secretName  *selectEntry
	secretValue *entry
	// secretHost and secretHeader bind a secret to the one host the
	// broker puts it in requests to.
	secretHost, secretHeader *entry
	secretHostNote           *widget.Label
	secretBrokers            map[string]store.SecretBroker
	secretSave               *widget.Button
	secretStatus             *widget.Label

	// Network.
	netRules      *rulesEditor
	publish       *widget.Check
	publishStatus *widget.Label
	certs         *certsSection

	// Defaults. memory offers New Session's steps (newsession_memory.go)
	// as memorySteps, in MiB.
	cpus, disk, budget *entry
	memory             *closeSelect
	memorySteps        []int
	agentCmd           *entry
	autoCommit         *widget.Check
	defaultsSave       *widget.Button
	defaultsStatus     *widget.Label

	// Guest image.
	rebuild, cancelBuild *widget.Button

	// Storage.
	storage       []storageRow
	storageList   *widget.List
	storageTotal  *widget.Label
	cleanup       *widget.Button
	storageStatus *widget.Label
	trash         *trashPanel
	envStorage    *envStoragePanel

	// General.
	sessions    *sessionsSection
	login       *widget.Check
	loginStatus *widget.Label
	settingUp   bool // the check is being set from the backend, not by a person
	loginLoaded bool
}

// storageRow is one session folder and what it takes on disk.
type storageRow struct {
	id, label, state string
	bytes            int64
}

func newSettingsWindow(u *UI) *settingsWindow {
	w := &settingsWindow{u: u, win: u.App.NewWindow("Sandbar Settings")}
	w.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon("Secrets", theme.AccountIcon(), w.secretsTab()),
		container.NewTabItemWithIcon(tabNetwork, theme.UploadIcon(), w.networkTab()),
		container.NewTabItemWithIcon("Defaults", theme.DocumentIcon(), w.defaultsTab()),
		container.NewTabItemWithIcon("Guest Image", theme.ComputerIcon(), w.imageTab()),
		container.NewTabItemWithIcon(tabStorage, theme.StorageIcon(), w.storageTab()),
		container.NewTabItemWithIcon("General", theme.SettingsIcon(), w.generalTab()),
	)
	w.tabs.OnSelected = func(*container.TabItem) { w.storageShown() }
	w.win.SetContent(w.tabs)
	w.win.Resize(fyne.NewSize(680, 560))
	w.win.SetOnClosed(func() {
		w.ub.release()
		if u.settingsWin == w {
			u.settingsWin = nil
		}
	})
	w.loadSecrets()
	w.loadNetwork()
	w.loadDefaults()
	u.image.refresh()
	w.loadStorage()
	w.loadLogin()
	w.sessions.load()
	return w
}

// note is a small explanatory line.
func note(text string) *widget.Label {
	l := widget.NewLabel(text)
	l.Wrapping = fyne.TextWrapWord
	l.Importance = widget.LowImportance
	return l
}

// statusLabel is an inline result line, hidden while empty.
func statusLabel() *widget.Label {
	l := widget.NewLabel("")
	l.Wrapping = fyne.TextWrapWord
	l.Hide()
	return l
}

func setStatus(l *widget.Label, imp widget.Importance, text string) {
	l.Importance = imp
	l.SetText(text)
	if text == "" {
		l.Hide()
	} else {
		l.Show()
	}
}

// --- Defaults ---

func (w *settingsWindow) defaultsTab() fyne.CanvasObject {
	num := func() *entry {
		e := newEntry()
		e.OnChanged = func(string) { w.validateDefaults() }
		return e
	}
	w.cpus, w.disk, w.budget = num(), num(), num()
	w.memory = newSelect(nil, func(string) { w.validateDefaults() })
	w.memory.PlaceHolder = "Loading…"
	w.agentCmd = newEntry()
	w.agentCmd.SetPlaceHolder("empty: Claude Code")
	w.agentCmd.OnChanged = func(string) { w.validateDefaults() }
	w.autoCommit = widget.NewCheck("Commit the work a session leaves uncommitted when it ends", nil)
	w.autoCommit.SetChecked(true)
	w.defaultsSave = widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), w.saveDefaults)
	w.defaultsSave.Importance = widget.HighImportance
	w.defaultsStatus = statusLabel()
	host := w.u.Backend.HostCPUs()
	small := func(o fyne.CanvasObject) fyne.CanvasObject {
		return container.NewGridWrap(fyne.NewSize(110, o.MinSize().Height), o)
	}
	form := container.New(layout.NewFormLayout(),
		widget.NewLabel("vCPUs"), container.NewHBox(small(w.cpus), widget.NewLabel(fmt.Sprintf("of %d", host))),
		widget.NewLabel("Memory"), w.memory.fixedWidth("16 GiB", "1536 MiB", "Loading…"),
		widget.NewLabel("Disk"), container.NewHBox(small(w.disk), widget.NewLabel("GiB")),
		widget.NewLabel("Memory budget"), container.NewHBox(small(w.budget), widget.NewLabel("% of this machine's memory for all sessions together")),
		widget.NewLabel("Default agent"), w.agentCmd,
		widget.NewLabel("Session end"), w.autoCommit,
	)
	return container.NewVBox(note("What a new session gets unless you change it in New Session, and what `sandbar start` uses."),
		form, note("The default agent is a shell command run in the session's /workspace; leave it empty for Claude Code."),
		note("Work left uncommitted is committed on the session's branch, with the prompt as the message, so that Merge brings it; off, it stays in the session."),
		container.NewHBox(layout.NewSpacer(), w.defaultsSave), w.defaultsStatus)
}

func (w *settingsWindow) loadDefaults() {
	s := w.u.Settings
	if s == nil {
		w.defaultsSave.Disable()
		return
	}
	w.u.background(func(ctx context.Context) {
		cpus := intSetting(ctx, s, KeyDefaultCPUs, session.DefaultCPUs)
		mem := intSetting(ctx, s, KeyDefaultMemoryMiB, session.DefaultMemoryMiB)
		hostMiB := memoryCeilingMiB
		if b, _ := w.u.Backend.Budget(ctx); b.Host > 0 {
			hostMiB = int(b.Host / vm.MiB)
		}
		disk := intSetting(ctx, s, KeyDefaultDiskGiB, session.DefaultDiskGiB)
		share := session.DefaultBudget
		if v, ok, _ := s.Setting(ctx, KeyMemoryBudget); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f > 0 && f <= 1 {
				share = f
			}
		}
		agent, _, _ := s.Setting(ctx, KeyDefaultAgent)
		commit, _, _ := s.Setting(ctx, KeyAutoCommit)
		w.u.post(func() {
			w.autoCommit.SetChecked(commit != "off")
			w.cpus.SetText(strconv.Itoa(cpus))
			w.setMemorySteps(hostMiB, mem)
			w.disk.SetText(strconv.Itoa(disk))
			w.budget.SetText(strconv.FormatFloat(math.Round(share*1000)/10, 'f', -1, 64))
			w.agentCmd.SetText(agent)
			setStatus(w.defaultsStatus, widget.MediumImportance, "")
			w.validateDefaults()
		})
	})
}

// defaults reads the Defaults tab as settings, with what is wrong.
func (w *settingsWindow) defaults() (map[string]string, []string) {
	var problems []string
	out := map[string]string{}
	host := w.u.Backend.HostCPUs()
	intField := func(key, label string, e *entry, lo, hi int) {
		n, err := strconv.Atoi(strings.TrimSpace(e.Text))
		if err != nil || n < lo || n > hi {
			problems = append(problems, fmt.Sprintf("%s: type a whole number from %d to %d.", label, lo, hi))
			return
		}
		out[key] = strconv.Itoa(n)
	}
	intField(KeyDefaultCPUs, "vCPUs", w.cpus, 1, max(host, 1))
	if i := w.memory.SelectedIndex(); i >= 0 && i < len(w.memorySteps) {
		out[KeyDefaultMemoryMiB] = strconv.Itoa(w.memorySteps[i])
	} else {
		problems = append(problems, "Memory: choose how much.")
	}
	intField(KeyDefaultDiskGiB, "Disk", w.disk, 1, maxDiskGiB)
	pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(w.budget.Text), "%"), 64)
	if err != nil || pct < 5 || pct > 100 {
		problems = append(problems, "Memory budget: type a percentage from 5 to 100.")
	} else {
		out[KeyMemoryBudget] = strconv.FormatFloat(pct/100, 'f', -1, 64)
	}
	out[KeyDefaultAgent] = strings.TrimSpace(w.agentCmd.Text)
	out[KeyAutoCommit] = "off"
	if w.autoCommit.Checked {
		out[KeyAutoCommit] = "on"
	}
	return out, problems
}

// defaultMemorySteps are the sizes Settings offers as the default
// memory, in MiB: New Session's steps up to this machine's memory, and
// the stored default whatever its size (set before the steps, or with
// the CLI), so that saving the other defaults keeps it.
func defaultMemorySteps(hostMiB, storedMiB int) []int {
	steps := memorySteps(hostMiB, storedMiB)
	if storedMiB >= int(vm.MinMemory/vm.MiB) && !slices.Contains(steps, storedMiB) {
		steps = append(steps, storedMiB)
		slices.Sort(steps)
	}
	return steps
}

// setMemorySteps offers the default memory's steps with storedMiB
// selected; a stored size below the guest's floor, which no session
// could start with, is not offered, and the smallest step is selected.
func (w *settingsWindow) setMemorySteps(hostMiB, storedMiB int) {
	w.memorySteps = defaultMemorySteps(hostMiB, storedMiB)
	names := make([]string, len(w.memorySteps))
	for i, s := range w.memorySteps {
		names[i] = memoryName(s)
	}
	w.memory.SetOptions(names)
	w.memory.SetSelected(memoryName(pickMemory(w.memorySteps, storedMiB)))
}

func (w *settingsWindow) validateDefaults() {
	_, problems := w.defaults()
	if len(problems) > 0 {
		setStatus(w.defaultsStatus, widget.DangerImportance, strings.Join(problems, "\n"))
		w.defaultsSave.Disable()
		return
	}
	if w.defaultsStatus.Importance == widget.DangerImportance {
		setStatus(w.defaultsStatus, widget.MediumImportance, "")
	}
	if w.u.Settings != nil {
		w.defaultsSave.Enable()
	}
}

func (w *settingsWindow) saveDefaults() {
	values, problems := w.defaults()
	if len(problems) > 0 || w.u.Settings == nil {
		return
	}
	w.defaultsSave.Disable()
	w.u.background(func(ctx context.Context) {
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var err error
		for _, k := range keys {
			if err = w.u.Settings.SetSetting(ctx, k, values[k]); err != nil {
				break
			}
		}
		w.u.post(func() {
			w.defaultsSave.Enable()
			if err != nil {
				setStatus(w.defaultsStatus, widget.DangerImportance, sentence(err.Error()))
				return
			}
			setStatus(w.defaultsStatus, widget.SuccessImportance, "Saved: new sessions use these.")
		})
	})
}

// --- Guest image ---

func (w *settingsWindow) imageTab() fyne.CanvasObject {
	b := w.u.image
	status := w.ub.label(b.status)
	status.Wrapping = fyne.TextWrapWord
	w.rebuild = widget.NewButtonWithIcon("Rebuild", theme.ViewRefreshIcon(), b.start)
	w.cancelBuild = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), b.stopBuild)
	w.cancelBuild.Hide()
	if w.u.Settings == nil {
		w.rebuild.Disable()
	}
	w.ub.listen(b.running, func() {
		if running, _ := b.running.Get(); running {
			w.rebuild.Disable()
			w.cancelBuild.Show()
		} else {
			if w.u.Settings != nil {
				w.rebuild.Enable()
			}
			w.cancelBuild.Hide()
		}
	})
	return container.NewVBox(
		note("Every session boots the same read-only guest: Debian, its kernel and the agent, built here without root. "+
			"A rebuild with unchanged inputs is a cache hit; downloads are cached, so it also works offline."),
		heading("Current image"), status,
		imageProgress(b, &w.ub), container.NewHBox(layout.NewSpacer(), w.cancelBuild, w.rebuild))
}

// imageProgress is the build's progress bar, stage and error, bound to
// the shared build; the buttons beside it follow b.running.
func imageProgress(b *imageBuild, ub *unbinder) fyne.CanvasObject {
	bar := widget.NewProgressBarWithData(b.progress)
	*ub = append(*ub, bar.Unbind)
	stage := ub.label(b.stage)
	stage.Wrapping = fyne.TextWrapWord
	problem := ub.label(b.problem)
	problem.Wrapping = fyne.TextWrapWord
	problem.Importance = widget.DangerImportance
	box := container.NewVBox(bar, stage)
	box.Hide()
	ub.listen(b.running, func() {
		if running, _ := b.running.Get(); running {
			box.Show()
		} else if s, _ := b.stage.Get(); s == "" {
			box.Hide()
		}
	})
	return container.NewVBox(box, problem)
}

// --- General ---

func (w *settingsWindow) generalTab() fyne.CanvasObject {
	w.login = widget.NewCheck("Open Sandbar at login", func(on bool) {
		if !w.settingUp {
			w.setLogin(on)
		}
	})
	w.login.Disable() // until the backend says how it is
	w.loginStatus = statusLabel()
	w.sessions = w.sessionsSection()
	return container.NewVScroll(container.NewVBox(w.login, note(launchAtLoginNote), w.loginStatus,
		widget.NewSeparator(), w.sessions.content()))
}

func (w *settingsWindow) loadLogin() {
	s := w.u.Settings
	if s == nil {
		return
	}
	w.u.background(func(context.Context) {
		on, settable, err := s.LaunchAtLogin()
		w.u.post(func() {
			w.loginLoaded = true
			w.settingUp = true
			w.login.SetChecked(on)
			w.settingUp = false
			if settable && err == nil {
				w.login.Enable()
			}
			if err != nil {
				setStatus(w.loginStatus, widget.DangerImportance, sentence(err.Error()))
			}
		})
	})
}

func (w *settingsWindow) setLogin(on bool) {
	w.u.background(func(context.Context) {
		err := w.u.Settings.SetLaunchAtLogin(on)
		w.u.post(func() {
			if err != nil {
				setStatus(w.loginStatus, widget.DangerImportance, sentence(err.Error()))
				w.settingUp = true
				w.login.SetChecked(!on)
				w.settingUp = false
				return
			}
			setStatus(w.loginStatus, widget.MediumImportance, "")
		})
	})
}
