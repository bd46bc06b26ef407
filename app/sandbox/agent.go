package sandbox

import (
	"fmt"
	"time"

	"sandbar/guest/protocol"
)

// What the session manager hears from its guest, named here: sandbox is
// the one host package that speaks the wire protocol (guest/protocol), so
// its callers take the guest's events and their parts from it.
type (
	// Event is one event from the guest supervisor.
	Event = protocol.Event
	// Port is a port a guest program listens on (EvPorts).
	Port = protocol.Port
	// LineJoiner joins the agent's output events into whole lines, with
	// bounds.
	LineJoiner = protocol.LineJoiner
	// ImageConfig is how a project's image runs its programs (user,
	// environment), for a guest whose root is that image's.
	ImageConfig = protocol.ImageConfig
)

// The guest's events a session acts on.
const (
	EvAgentStarted = protocol.EvAgentStarted
	// EvAgentPrepared answers PrepareAgent.
	EvAgentPrepared = protocol.EvAgentPrepared
	EvAgentStdout   = protocol.EvAgentStdout
	EvAgentStderr   = protocol.EvAgentStderr
	EvAgentExit     = protocol.EvAgentExit
	EvStats         = protocol.EvStats
	EvError         = protocol.EvError
	EvWorkspace     = protocol.EvWorkspace
	EvPorts         = protocol.EvPorts
	EvToolOutput    = protocol.EvToolOutput
)

// AgentStart is what the guest needs to start a session's agent.
type AgentStart struct {
	// Branch is the session's branch, made in the guest's workspace.
	Branch  string
	Command string
	Args    []string
	// Env is the agent's environment; secrets travel only here.
	Env map[string]string
	// Now sets the guest's clock before the agent starts.
	Now time.Time
	// CACert is Sandbar's CA certificate (PEM) for the guest to trust.
	CACert string
	// GitName and GitEmail are the identity of the agent's commits.
	GitName, GitEmail string
	// NoSudo takes sudo inside the VM away from the agent user.
	NoSudo bool
	// Image is the configuration of the image the guest's root is
	// (Options.Root); nil on Sandbar's own.
	Image *ImageConfig
}

// StartAgent asks the guest to start the agent; agent:started (or an
// error event) answers through OnEvent.
func (s *Sandbox) StartAgent(a AgentStart) error {
	return s.sendStart(a, false)
}

// PrepareAgent asks the guest to do all a start does but start the agent
// (its user, clock, git, trust, sudo, branch); agent:prepared (or an
// error event) answers through OnEvent. Execs then run as the agent will:
// an environment's setup commands run between it and StartAgent.
func (s *Sandbox) PrepareAgent(a AgentStart) error {
	return s.sendStart(a, true)
}

func (s *Sandbox) sendStart(a AgentStart, prepare bool) error {
	cmd := protocol.Command{
		// Workdir left to the guest: its workspace mount.
		Cmd: protocol.CmdStart, ID: "start", Branch: a.Branch,
		Agent: &protocol.Agent{Command: a.Command, Args: a.Args},
		Env:   a.Env, Time: a.Now.UnixNano(),
		CACert: a.CACert, NoSudo: a.NoSudo, Image: a.Image, Prepare: prepare,
	}
	if a.GitName != "" || a.GitEmail != "" {
		cmd.Git = &protocol.GitIdentity{Name: a.GitName, Email: a.GitEmail}
	}
	if err := s.Client.Send(cmd); err != nil {
		return fmt.Errorf("start the agent: %w", err)
	}
	return nil
}

// StopAgent asks the guest to stop the agent: SIGTERM, then SIGKILL after
// grace; agent:exit answers.
func (s *Sandbox) StopAgent(grace time.Duration) error {
	return s.Client.Send(protocol.Command{Cmd: protocol.CmdStop, ID: "stop", Grace: grace.Milliseconds()})
}

// Chat gives the agent a line on its stdin.
func (s *Sandbox) Chat(text string) error {
	return s.Client.Send(protocol.Command{Cmd: protocol.CmdChat, ID: "chat", Text: text})
}

// Interrupt sends SIGINT to the agent's process group in the guest.
func (s *Sandbox) Interrupt() error {
	return s.Client.Send(protocol.Command{Cmd: protocol.CmdInterrupt, ID: "interrupt"})
}

// SetTime sets the guest's clock.
func (s *Sandbox) SetTime(now time.Time) error {
	return s.Client.Send(protocol.Command{Cmd: protocol.CmdSetTime, ID: "settime", Time: now.UnixNano()})
}

// StartNotes are what the guest said about the agent's start
// (agent:started's notes: the agent's account on an image's root, sudo
// missing from the image), each one line of printable text. They are the
// guest's words, for a person to read: shown, never acted on.
func StartNotes(ev Event) []string {
	var out []string
	for _, n := range ev.Notes {
		if n = oneLine(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
