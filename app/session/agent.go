package session

import "sandbar/app/store"

// AgentSpec says what runs as the agent. The zero value is Claude Code.
type AgentSpec struct {
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

// Claude reports whether this is the default Claude Code agent.
func (a AgentSpec) Claude() bool { return a.Command == "" || a.Command == "claude" && len(a.Args) == 0 }

// ClaudeArgs is how the default agent runs: headless, structured in and out.
var ClaudeArgs = []string{"-p", "--verbose", "--output-format", "stream-json", "--input-format", "stream-json", "--dangerously-skip-permissions"}

// AgentKind is what kind of agent a session runs, as the store records it
// (store.Agent.Kind): Claude Code, whose output Sandbar reads as a
// transcript and which continues its conversation on a restart, or any
// other command.
type AgentKind string

// Agent kinds.
const (
	AgentClaude AgentKind = "claude"
	AgentCustom AgentKind = "custom"
)

// kindOf is the kind of agent a stored session runs.
func kindOf(a store.Agent) AgentKind { return AgentKind(a.Kind) }

// stored is the agent a new session records: the default one as Claude
// Code runs headless, any other as given.
func (a AgentSpec) stored() store.Agent {
	if a.Claude() {
		return store.Agent{Command: "claude", Args: ClaudeArgs, Kind: string(AgentClaude)}
	}
	return store.Agent{Command: a.Command, Args: a.Args, Kind: string(AgentCustom)}
}

// specOf is the AgentSpec a stored session's agent is set up from again
// (a restart): Claude Code as the default, any other as recorded.
func specOf(a store.Agent) AgentSpec {
	if kindOf(a) == AgentClaude {
		return AgentSpec{}
	}
	return AgentSpec{Command: a.Command, Args: a.Args}
}
