package session

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"sandbar/app/store"
)

// Title lengths, in characters.
const (
	// titleFromPrompt is the most a title made from a prompt holds: a
	// list row, a window's title bar and a notification's first line
	// show about this much.
	titleFromPrompt = 60
	// MaxTitle is the most a title given by a rename may hold.
	MaxTitle = 120
)

// Title is what a person calls session s: its title, or for a session
// from before titles, one made from its prompt as Start would have.
func Title(s store.Session) string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return t
	}
	return TitleFor(s.Prompt, s.Agent, s.ID)
}

// TitleFor makes a session's title from what it was started with: the
// prompt's first line that says something, trimmed and cut at a word
// to about 60 characters; without a prompt, a custom agent's command;
// else "Session " and the start of its id.
func TitleFor(prompt string, agent store.Agent, id string) string {
	for _, line := range strings.Split(prompt, "\n") {
		if t := oneLine(strings.TrimLeft(strings.TrimSpace(line), "#>*-• \t")); t != "" {
			return shorten(t, titleFromPrompt)
		}
	}
	if agent.Kind == string(AgentCustom) && agent.Command != "" {
		cmd := append([]string{agent.Command}, agent.Args...)
		// "sh -c 'make test'" is what a custom command from the settings
		// or the New Session window runs: the script is the name.
		if len(cmd) == 3 && (cmd[0] == "sh" || cmd[0] == "bash") && cmd[1] == "-c" {
			cmd = cmd[2:]
		}
		if t := oneLine(strings.Join(cmd, " ")); t != "" {
			return shorten(t, titleFromPrompt)
		}
	}
	return fmt.Sprintf("Session %.6s", id)
}

// CleanTitle is a title a person typed, as it is kept: on one line,
// spaces collapsed. An empty result means "make one from the prompt
// again"; a title longer than MaxTitle is refused.
func CleanTitle(title string) (string, error) {
	t := oneLine(title)
	if n := utf8.RuneCountInString(t); n > MaxTitle {
		return "", fmt.Errorf("the title is %d characters long: keep it to %d: %w", n, MaxTitle, ErrBadOptions)
	}
	return t, nil
}

// oneLine turns s into one line of text: control characters and runs of
// white space become one space, and the ends are trimmed.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shorten cuts s to at most n characters, at the last word break in its
// second half if there is one, and marks the cut with an ellipsis.
func shorten(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	cut := n - 1 // room for the ellipsis
	for i := cut; i > n/2; i-- {
		if rs[i] == ' ' {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(rs[:cut]), func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) + "…"
}
