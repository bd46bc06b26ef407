package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// tabTrust names the Trust tab of Project Settings.
const tabTrust = "Trust"

// trustMaxLines bounds the lines of one file's diff shown in the window.
const trustMaxLines = 400

// trustPane is the Trust tab of Project Settings: the repository's own
// settings files (.sandbar/network, .sandbarinclude/.worktreeinclude,
// .devcontainer), what each asks for and the diff since the version the
// person trusted, with Trust and Ignore. Sessions use a kind's files only
// once its exact content is trusted. Everything shown from the files is
// the repository's text, which an agent may have written: shown with
// control characters as visible stand-ins.
type trustPane struct {
	u      *UI
	ref    string // the project's path
	box    *fyne.Container
	rows   *fyne.Container
	status *widget.Label
	trust  *widget.Button
	ignore *widget.Button
	review session.RepoReview
	// diffs are the labels showing each pending kind's diff, for tests.
	diffs map[string]*widget.Label
}

func newTrustPane(u *UI, ref, project string) *trustPane {
	p := &trustPane{u: u, ref: ref, rows: container.NewVBox(), status: statusLabel(), diffs: map[string]*widget.Label{}}
	p.trust = widget.NewButtonWithIcon("Trust", theme.ConfirmIcon(), func() { p.decide(store.TrustTrusted) })
	p.trust.Importance = widget.HighImportance
	p.ignore = widget.NewButtonWithIcon("Ignore", theme.CancelIcon(), func() { p.decide(store.TrustIgnored) })
	p.trust.Disable()
	p.ignore.Disable()
	p.box = container.NewBorder(
		note("A repository's own settings files come with its commits, which an agent's merged work may have written. Sessions of "+project+
			" use them only once you trust their exact content; a change needs your trust again. Even trusted, a repository's network file may add only names and single addresses, on named ports."),
		container.NewVBox(container.NewHBox(layout.NewSpacer(), p.ignore, p.trust), p.status),
		nil, nil, container.NewVScroll(p.rows))
	return p
}

// load reads the project's repository settings and their trust.
func (p *trustPane) load() {
	p.u.background(func(ctx context.Context) {
		rev, err := p.u.Backend.RepoTrust(ctx, p.ref)
		p.u.post(func() {
			if err != nil {
				setStatus(p.status, widget.DangerImportance, "Cannot read the repository's settings: "+sentence(err.Error()))
				return
			}
			p.show(rev)
		})
	})
}

// show lays out one row per kind the repository has.
func (p *trustPane) show(rev session.RepoReview) {
	p.review = rev
	p.rows.RemoveAll()
	clear(p.diffs)
	pending := len(rev.Pending())
	for _, pr := range rev.Proposals {
		if !pr.Present() {
			continue
		}
		head := widget.NewLabelWithStyle(pr.Label()+": "+session.TrustStateWords(pr.State), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		p.rows.Add(head)
		p.rows.Add(note("Asks for " + pr.What() + "."))
		for _, f := range pr.Files {
			if f.Problem != "" {
				l := note(displayLine(f.Path) + ": left out: " + displayLine(f.Problem))
				l.Importance = widget.WarningImportance
				p.rows.Add(l)
			}
		}
		if pr.Refused != "" {
			l := note("Refused as a whole, even if trusted: " + displayLine(pr.Refused))
			l.Importance = widget.DangerImportance
			p.rows.Add(l)
		}
		if !pr.Pending() {
			continue
		}
		what := "What it asks for (never trusted before):"
		if pr.Trusted.Present() {
			what = "Changes since the version you trusted:"
		}
		p.rows.Add(note(what))
		d := widget.NewLabelWithStyle(trustDiffText(pr.Diff), fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
		p.diffs[pr.Kind] = d
		p.rows.Add(d)
		p.rows.Add(widget.NewSeparator())
	}
	switch {
	case len(p.rows.Objects) == 0:
		p.rows.Add(note("This repository has no settings files of its own (.sandbar/network, .sandbarinclude, .worktreeinclude, .devcontainer)."))
	}
	if pending > 0 {
		p.trust.Enable()
		p.ignore.Enable()
		setStatus(p.status, widget.WarningImportance, fmt.Sprintf("%d waiting for your decision: Trust uses exactly the content shown; Ignore leaves it out and stops asking until it changes.", pending))
	} else {
		p.trust.Disable()
		p.ignore.Disable()
		p.status.SetText("")
	}
	p.rows.Refresh()
}

// decide trusts or ignores the pending content, by the hashes shown.
func (p *trustPane) decide(decision string) {
	hashes := map[string]string{}
	for _, pr := range p.review.Pending() {
		hashes[pr.Kind] = pr.Hash
	}
	if len(hashes) == 0 {
		return
	}
	p.trust.Disable()
	p.ignore.Disable()
	p.u.background(func(ctx context.Context) {
		err := p.u.Backend.DecideRepoTrust(ctx, p.ref, decision, hashes)
		rev, rerr := p.u.Backend.RepoTrust(ctx, p.ref)
		p.u.post(func() {
			if rerr == nil {
				p.show(rev)
			}
			switch {
			case errors.Is(err, session.ErrTrustChanged):
				setStatus(p.status, widget.WarningImportance, "The files changed while you read them: nothing was recorded. Read them again below.")
			case err != nil:
				setStatus(p.status, widget.DangerImportance, "Not recorded: "+sentence(err.Error()))
			case decision == store.TrustTrusted:
				setStatus(p.status, widget.SuccessImportance, "Trusted: sessions started from now on use this content.")
			default:
				setStatus(p.status, widget.SuccessImportance, "Ignored: sessions do not use this content, and Sandbar does not ask again until it changes.")
			}
			if p.u.mainWin != nil {
				p.u.mainWin.reload()
			}
		})
	})
}

// trustDiffText is a diff as shown: each line made visible, and at most
// trustMaxLines of them.
func trustDiffText(d string) string {
	lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
	more := 0
	if len(lines) > trustMaxLines {
		lines, more = lines[:trustMaxLines], len(lines)-trustMaxLines
	}
	for i, l := range lines {
		lines[i] = displayLine(l)
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more lines: `sandbar project trust` prints them all", more))
	}
	return strings.Join(lines, "\n")
}

// showTrust puts what waits for the person's trust in the Sandbar
// window's trust banner, with Review… opening the first such project's
// Trust tab; nothing hides it.
func (mw *mainWindow) showTrust(list []projectTrust) {
	if len(list) == 0 {
		mw.trustShown = ""
		mw.trustBanner.hide()
		return
	}
	first := list[0]
	msg := first.notes[0]
	if n := len(first.notes) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more of its settings files)", n)
	}
	if n := len(list) - 1; n > 0 {
		msg += fmt.Sprintf(" %d other %s too.", n, pluralWord(n, "project has settings waiting for your trust", "projects have settings waiting for your trust"))
	}
	if msg == mw.trustShown {
		return // shown, or dismissed by the person: not again until it changes
	}
	mw.trustShown = msg
	mw.trustBanner.showAction(bannerInfo, msg, "Review…", func() { mw.u.showProjectTrust(first.id) })
}

// showProjectTrust opens a project's settings at its Trust tab.
func (u *UI) showProjectTrust(id int64) {
	w := u.showProjectSettings(id)
	for i, it := range w.tabs.Items {
		if it.Text == tabTrust {
			w.tabs.SelectIndex(i)
			return
		}
	}
	w.wantTrust = true
}
