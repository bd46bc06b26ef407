package session

import (
	"context"
	"fmt"
	"time"
)

// Chat sends text to the agent's input.
func (m *Manager) Chat(ctx context.Context, ref, text string) error {
	// A message to a suspended session brings it back first.
	if err := m.ensureResumed(ctx, ref); err != nil {
		return err
	}
	_, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return err
	}
	return r.chat(text)
}

// chat writes a message to the agent's input.
func (r *run) chat(text string) error {
	r.mu.Lock()
	sb := r.sb
	r.lastActive = time.Now()
	r.mu.Unlock()
	if sb == nil {
		return fmt.Errorf("session %s is not running yet: %w", r.id, ErrState)
	}
	if err := r.pausedErr(); err != nil {
		return err
	}
	line := text
	if r.claude {
		line = UserMessage(text)
	}
	// Recorded before it is sent, so the agent's answer always follows it.
	red := r.red.Redact(text)
	r.addLine("chat", red)
	if r.claude {
		r.addEntry(Entry{Kind: EntryUser, Time: time.Now(), Text: red})
	}
	// Another agent waits only after an interrupt (or idleness): a
	// message sets it working again.
	r.setActivity(r.ctx, ActivityWorking, "working")
	if err := sb.Chat(line); err != nil {
		r.systemLine("the message did not reach the agent: " + err.Error())
		return err
	}
	return nil
}
