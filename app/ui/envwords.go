package ui

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	sbwidget "sandbar/app/ui/widget"
)

// How the windows say a project's environment in one line (New Session,
// the Environment tab's heading). Everything taken from the repository
// (the error's text, a step naming a feature) is its text, which an
// agent may have written: shown with control characters made visible
// and clipped.

// envTextMax bounds one line of the repository's text in a label.
const envTextMax = 300

// envText is repository text as one label line shows it.
func envText(s string) string {
	return sbwidget.ClipRunes(displayLine(strings.TrimSpace(s)), envTextMax)
}

// firstLine is the first line of s: an error's tail goes to the log.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// envLineWords is a project's environment in one line, and how it
// matters: ready, on the way, or something the person should know.
func envLineWords(v session.EnvironmentView, now time.Time) (string, widget.Importance) {
	own := "Sandbar's own image"
	switch {
	case v.File == "":
		return own + " (the repository has no devcontainer.json)", widget.MediumImportance
	case v.Error != "" && v.Trust == session.TrustTrusted:
		// A trusted file that does not parse refuses the start.
		return fmt.Sprintf("the repository's %s cannot be used: %s — fix it, or start in %s", envText(v.File), envText(firstLine(v.Error)), own), widget.DangerImportance
	case v.Error != "":
		return fmt.Sprintf("%s: the repository's %s cannot be used: %s", own, envText(v.File), envText(firstLine(v.Error))), widget.WarningImportance
	case v.Source != "devcontainer":
		return fmt.Sprintf("%s: the repository's %s is %s (the Trust tab of Project Settings)", own, envText(v.File), session.TrustStateWords(v.Trust)), widget.WarningImportance
	}
	file := envText(v.File)
	p := v.Prepared
	if p == nil {
		what := "nothing to prepare"
		if v.Image != "" && v.Pulled == nil {
			what = "its image is pulled when the session starts"
		}
		return file + " — " + what, widget.MediumImportance
	}
	switch p.State {
	case session.PrepPreparing:
		step := ""
		if p.Step != "" {
			step = " (" + envText(p.Step) + ")"
		}
		if p.Serving == nil {
			step += ": a new session waits for it"
		}
		return file + " — preparing…" + step, widget.MediumImportance
	case session.PrepReady:
		return fmt.Sprintf("%s — ready (prepared %s)", file, preparedAgo(p, now)), widget.SuccessImportance
	case session.PrepFailed:
		why := envText(firstLine(p.Error))
		if p.Serving != nil {
			return fmt.Sprintf("%s — failed: %s — sessions use the last good one (prepared %s)", file, why, ageWords(now, p.Serving.Made)), widget.WarningImportance
		}
		return fmt.Sprintf("%s — failed: %s — none is ready: a session fails until it is fixed, or uses %s", file, why, own), widget.DangerImportance
	}
	return file + " — not prepared yet: the first session prepares it, once, and waits", widget.MediumImportance
}

// preparedAgo is when the environment sessions boot on was made.
func preparedAgo(p *session.PreparedView, now time.Time) string {
	made := p.Made
	if p.Serving != nil {
		made = p.Serving.Made
	}
	return ageWords(now, made)
}
