package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"sandbar/app/net/policy"
	"sandbar/app/session"
)

// limits reads the limits as typed, with what is wrong with them.
func (w *newSessionWindow) limits() (o session.Options, problems []string) {
	o.CPUs = int(w.cpus.Value)
	if o.CPUs < 1 || o.CPUs > w.hostCPUs {
		problems = append(problems, fmt.Sprintf("vCPUs: give 1 to %d.", w.hostCPUs))
	}
	if p := w.memoryProblem(); p != "" {
		problems = append(problems, p)
	}
	o.MemoryMiB = w.memoryMiB()
	disk, err := strconv.Atoi(strings.TrimSpace(w.disk.Text))
	if err != nil || disk < 1 || disk > maxDiskGiB {
		problems = append(problems, fmt.Sprintf("Disk: type a whole number of GiB from 1 to %d.", maxDiskGiB))
	}
	o.DiskGiB = disk
	t, err := parseTimeout(w.timeout.Text)
	if err != nil {
		problems = append(problems, "Timeout: "+err.Error())
	}
	o.Timeout = t
	// Untouched, the mode is left to the project's and Sandbar's
	// settings, which the choice shows.
	if w.netEdited {
		switch w.network.Selected {
		case modeName(policy.ModeOff):
			o.Network, o.NoNetwork = session.NetworkOff, true
		case modeName(policy.ModeOpen):
			o.Network = session.NetworkOpen
		default:
			o.Network = session.NetworkAllowlist
		}
	}
	return o, problems
}

// parseTimeout reads a timeout: empty for none, a Go duration (45m,
// 1h30m) or a bare number of minutes.
func parseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%q is negative: give a length such as 45m or 2h, or leave it empty", s)
		}
		return time.Duration(n) * time.Minute, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a length of time: type one such as 45m or 2h, or leave it empty", s)
	}
	return d, nil
}

// options reads the whole form; problems lists what stops a start.
func (w *newSessionWindow) options() (session.Options, []string) {
	var problems []string
	p, ok := w.selected()
	switch {
	case !w.loaded:
		problems = append(problems, "Loading…")
	case len(w.projects) == 0:
		problems = append(problems, "Add a project first: drop its folder on the Sandbar window.")
	case !ok:
		problems = append(problems, "Choose a project.")
	}
	o, lp := w.limits()
	problems = append(problems, lp...)
	o.Project = strconv.FormatInt(p.ID, 10)
	o.Base = strings.TrimSpace(w.base.Text)
	o.Prompt = strings.TrimSpace(w.prompt.Text)
	if w.envDefault != nil && w.envDefault.Visible() && w.envDefault.Checked {
		o.Env = session.EnvDefault
	}
	switch w.agent.Selected {
	case agentCustom:
		cmd := strings.TrimSpace(w.command.Text)
		switch {
		case cmd == "" && w.commandSet:
			problems = append(problems, "Agent: type the command to run, or choose Claude Code.")
		case cmd == "":
			// Not typed yet: nothing is wrong, and Start waits for it.
			problems = append(problems, "")
		}
		o.Agent = session.AgentSpec{Command: "sh", Args: []string{"-c", cmd}}
	default:
		// Named, so a default agent in the settings does not replace it.
		o.Agent = session.AgentSpec{Command: "claude"}
	}
	return o, problems
}

// validate shows what is wrong and enables Start only when nothing is.
func (w *newSessionWindow) validate() {
	w.cpusLabel.SetText(fmt.Sprintf("%d of %d", int(w.cpus.Value), w.hostCPUs))
	w.memoryHint.SetText(w.memoryHintText())
	_, problems := w.options()
	if w.loaded {
		w.showProblems(problems)
	}
	if len(problems) > 0 || w.starting {
		w.start.Disable()
	} else {
		w.start.Enable()
	}
}

// showProblems shows what stops a start, below the fields; an empty
// problem (a field not filled in yet) keeps Start disabled and shows
// nothing.
func (w *newSessionWindow) showProblems(problems []string) {
	var shown []string
	for _, p := range problems {
		if p != "" {
			shown = append(shown, p)
		}
	}
	w.problems.SetText(strings.Join(shown, "\n"))
	if len(shown) == 0 {
		w.problems.Hide()
	} else {
		w.problems.Show()
	}
}
