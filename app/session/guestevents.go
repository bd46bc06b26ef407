package session

import (
	"time"

	"sandbar/app/sandbox"
)

// The guest's events, as a run takes them. Each arrives on the sandbox
// client's reader goroutine, so a handler never blocks: what the state
// machine waits for (agent:started, agent:exit, a start's error) is handed
// over on a buffered channel, and the rest is recorded and published.
// Everything the guest sends is hostile input: text is redacted before it
// is recorded, and lines are bounded by the joiner and the log sink.

// onEvent dispatches one of the guest's events.
func (r *run) onEvent(ev sandbox.Event) {
	switch ev.Ev {
	case sandbox.EvWorkspace:
		r.notifyChanged()
	case sandbox.EvPorts:
		r.onPorts(ev)
	case sandbox.EvAgentStdout, sandbox.EvAgentStderr:
		r.onAgentOutput(ev)
	case sandbox.EvAgentStarted:
		handOver(r.agentStarted, ev)
	case sandbox.EvAgentPrepared:
		handOver(r.agentPrepared, ev)
	case sandbox.EvAgentExit:
		r.endLive()
		handOver(r.agentExit, ev)
	case sandbox.EvToolOutput:
		r.onToolOutput(ev)
	case sandbox.EvStats:
		r.onStats(ev)
	case sandbox.EvError:
		r.onGuestError(ev)
	}
}

// handOver gives v to whoever waits on c, dropping it if one is already
// waiting to be taken.
func handOver[T any](c chan T, v T) {
	select {
	case c <- v:
	default:
	}
}

// onPorts hands the guest's listening ports to the session's network.
func (r *run) onPorts(ev sandbox.Event) {
	r.mu.Lock()
	sn := r.net
	r.ports = ev.Ports
	r.mu.Unlock()
	if sn != nil {
		sn.guestPorts(ev.Ports)
	}
}

// onAgentOutput records a line of the agent's output, once the joiner has
// a whole one; Claude Code's stdout is also read as its transcript, whose
// end of a turn means the agent waits for the person.
func (r *run) onAgentOutput(ev sandbox.Event) {
	line, ok := r.joiner.Add(ev)
	if !ok {
		return
	}
	r.mu.Lock()
	r.lastActive = time.Now()
	r.mu.Unlock()
	text := r.red.Redact(string(line))
	stream := "stdout"
	if ev.Ev == sandbox.EvAgentStderr {
		stream = "stderr"
	}
	r.addLine(stream, text)
	if !r.claude || stream != "stdout" {
		return
	}
	if p, ok := parseToolProgress([]byte(text)); ok {
		r.onToolProgress(p)
	}
	entries, _ := ParseClaudeLine([]byte(text), ev.Time())
	for _, e := range entries {
		r.addEntry(e)
		switch e.Kind {
		case EntryToolUse:
			r.liveTool(e.Tool, e.Input)
		case EntryToolResult, EntryResult:
			r.endLive()
		}
		switch {
		case e.Kind == EntryRetry:
			r.apiRetrying(e)
		case e.Kind == EntryResult && r.takeInterrupt():
			// An interrupted turn ends as an error (Claude Code's
			// error_during_execution); the person asked for it.
			r.setActivity(r.ctx, ActivityWaiting, ReasonInterrupted)
			r.m.hub.publish(Event{Session: r.id, Time: e.Time, Kind: EventTurn, Turn: turnOf(e)})
		case e.Kind == EntryResult && e.IsError:
			r.m.hub.publish(Event{Session: r.id, Time: e.Time, Kind: EventTurn, Turn: turnOf(e)})
			r.turnFailed(e)
		case e.Kind == EntryResult:
			r.setActivity(r.ctx, ActivityWaiting, "waiting for your message: "+e.Summary())
			r.m.hub.publish(Event{Session: r.id, Time: e.Time, Kind: EventTurn, Turn: turnOf(e)})
		default:
			r.apiAnswers()
		}
	}
}

// onStats publishes the guest's figures with the host's view of the VM.
func (r *run) onStats(ev sandbox.Event) {
	st := Stats{CPU: ev.CPU, MemUsed: ev.MemUsed, MemTotal: ev.MemTotal, Procs: ev.Procs}
	if ev.Disk != nil {
		st.DiskUsed, st.DiskTotal = ev.Disk.Scratch.Used, ev.Disk.Scratch.Total
		st.WSUsed, st.WSTotal = ev.Disk.Workspace.Used, ev.Disk.Workspace.Total
	}
	r.mu.Lock()
	sb := r.sb
	r.memUsed, r.memTotal = ev.MemUsed, ev.MemTotal
	waiting := r.activity == ActivityWaiting && r.pause == nil
	r.mu.Unlock()
	r.adjustBalloon(waiting, ev.MemUsed, ev.MemTotal)
	if sb != nil {
		if hs, err := sb.Stats(); err == nil {
			st.HostRSS, st.HostCPUSec = hs.RSS, hs.CPUTime.Seconds()
		}
	}
	r.m.hub.publish(Event{Session: r.id, Time: ev.Time(), Kind: EventStats, Stats: &st})
}

// onGuestError logs the guest's error; one answering start fails it.
func (r *run) onGuestError(ev sandbox.Event) {
	msg := r.red.Redact(ev.Message)
	if ev.ID == "start" {
		handOver(r.startErr, msg)
	}
	r.systemLine("guest: " + msg)
}
