package ui

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// This file says sessions' states, ends and changes in the words a
// person uses: "stopped by you", not "exit 143"; "untracked", not "?".
// The main window, the session window, the tray and the notifications
// all say them through here, so that they say the same.

// sessionStatus is a session's state in a few lowercase words ("working",
// "waiting for you", "stopped by you", "finished", "failed"), and what a
// person may want to know beside it ("the agent quit with error code 3",
// "timed out after 1h0m0s"), "" when the state says it all.
func sessionStatus(s store.Session) (state, detail string) {
	detail = s.Reason
	switch s.State {
	case session.StateProvisioning:
		if step, ok := envWaitStep(detail); ok {
			return "waiting for its environment", step
		}
		return "cloning", detail
	case session.StateBooting:
		return "starting", detail
	case session.StateRunning:
		switch s.Activity {
		case session.ActivityWaiting:
			// "waiting for your message", or why it waits still.
			detail = strings.TrimLeft(strings.TrimPrefix(detail, "waiting for your message"), ": ")
			return "waiting for you", detail
		case session.ActivityRetrying:
			// "Can't reach the Anthropic API — retry 3/10"
			return "retrying", detail
		case session.ActivityPaused:
			// "the disk holding Sandbar's data is full (12 MB free)"
			return "paused", strings.TrimPrefix(detail, "paused: ")
		case session.ActivityWorking:
			if detail == session.ActivityWorking {
				detail = ""
			}
			return "working", detail
		}
		return "running", detail
	case session.StateStopping:
		return "stopping", plainReason(detail)
	case session.StateStopped:
		if why, ok := session.NotSaved(s.Reason); ok {
			return "stopped — work not saved", why
		}
		switch s.Reason {
		case session.ReasonStoppedByUser:
			return "stopped by you", ""
		case session.ReasonQuit:
			return "stopped when Sandbar quit", ""
		case session.ReasonRemoved:
			return "stopped", ""
		}
		if s.ExitCode != nil && *s.ExitCode == 0 {
			return "finished", ""
		}
		return "stopped", plainReason(detail)
	case session.StateFailed:
		if s.ExitCode != nil && (detail == "" || strings.HasPrefix(detail, "agent ")) {
			// The agent's exit ended the session ("agent exited with
			// code 137"): say how in words. A reason of the session's
			// own ("The API key was refused — …") is kept.
			return "failed", agentExitWords(*s.ExitCode)
		}
		return "failed", detail
	case session.StateInterrupted:
		return "interrupted", detail
	case session.StateSuspended:
		// Its reason is the way back, which the window's buttons and
		// the tray already offer; the row says why, when Sandbar did it.
		return "suspended", session.SuspendedWhy(s.Reason)
	}
	return string(s.State), detail
}

// plainReason rewords the few machine-made reasons a person may see
// while a session stops or after it stopped on its own.
func plainReason(r string) string {
	switch {
	case r == "agent finished":
		return ""
	case strings.HasPrefix(r, "agent exited;"):
		return "the agent ended; saving its work and shutting the VM down"
	case r == session.ReasonStoppedByUser:
		return "stopped by you"
	}
	return r
}

// agentExitWords says how the agent's process ended, from its exit
// status (128+n: ended by signal n).
func agentExitWords(code int) string {
	switch code {
	case 0:
		return "the agent finished"
	case 126, 127:
		return fmt.Sprintf("the agent's command could not be run (not found or not executable; code %d)", code)
	case 128 + 2:
		return "the agent was interrupted"
	case 128 + 9:
		return "the agent was killed (it may have run out of memory)"
	case 128 + 15:
		return "the agent was told to stop"
	}
	if code > 128 && code < 128+65 {
		return fmt.Sprintf("the agent was ended by the system (signal %d)", code-128)
	}
	return fmt.Sprintf("the agent quit with error code %d", code)
}

// stateSentence is sessionStatus as a line a window shows: "Failed — the
// agent quit with error code 3".
func stateSentence(s store.Session) string {
	state, detail := sessionStatus(s)
	if state == "retrying" && detail != "" {
		return detail // it says it all: "Can't reach the Anthropic API — retry 3/10"
	}
	text := capitalize(state)
	switch {
	case detail == "":
	case strings.Contains(state, " — "): // "Stopped — work not saved: why"
		text += ": " + detail
	default:
		text += " — " + detail
	}
	return text
}

// changeWords is how a changed file's git status reads, and its colour.
func changeWords(status string) (string, widget.Importance) {
	switch status {
	case "added":
		return "added", widget.SuccessImportance
	case "deleted":
		return "deleted", widget.DangerImportance
	case "renamed":
		return "renamed", widget.HighImportance
	case "untracked":
		return "untracked", widget.SuccessImportance
	case "unmerged":
		return "conflict", widget.WarningImportance
	}
	return "modified", widget.WarningImportance
}

// capitalize upper-cases s's first letter.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// envWaitPrefix begins the reason of a session waiting for its
// project's prepared environment (the session manager's waitPrepared
// writes it, the step after it).
const envWaitPrefix = "preparing the environment: "

// envWaitStep is the step of the preparation a session waits for, and
// whether it waits for one.
func envWaitStep(reason string) (string, bool) {
	if !strings.HasPrefix(reason, envWaitPrefix) {
		return "", false
	}
	return "preparing it: " + strings.TrimPrefix(reason, envWaitPrefix), true
}
