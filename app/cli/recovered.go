package cli

import (
	"context"
	"fmt"
	"strings"

	"sandbar/app/cli/termsafe"
)

// sayRecovered prints, once, the sessions the engine adopted back because
// the database had lost them (store.TakeRecovered): on stderr, so that
// `ls --json` stays JSON. A store it cannot read or write says nothing
// here: the sessions' own reasons say "recovered" all the same.
func sayRecovered(ctx context.Context, env *Env) {
	st, err := env.Store()
	if err != nil {
		return
	}
	r, ok, err := st.TakeRecovered(ctx)
	if err != nil || !ok {
		return
	}
	fmt.Fprintln(env.Stderr, RecoveredLine(r.IDs))
}

// RecoveredLine is what `sandbar ls` and the main window say of the
// sessions the engine adopted back.
func RecoveredLine(ids []string) string {
	short := make([]string, len(ids))
	for i, id := range ids {
		short[i] = id[:min(8, len(id))]
	}
	noun := "sessions"
	if len(ids) == 1 {
		noun = "session"
	}
	return fmt.Sprintf("recovered %d %s the database had lost (%s): adopted back from their folders and saved work; `sandbar merge ID` brings their work home",
		len(ids), noun, termsafe.Line(strings.Join(short, ", ")))
}
