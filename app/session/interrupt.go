package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// ReasonInterrupted is the reason of a session whose turn the person
// interrupted: it runs, and its agent waits for the next message.
const ReasonInterrupted = "interrupted — waiting for your message"

// Interrupt ends the agent's current turn and leaves the session running
// and waiting for a message; the VM and the agent live on. Claude Code
// gets its stream-json interrupt request (what its SDKs send for Esc):
// it stops the running tool, answers the call as interrupted and ends
// the turn. Any other agent gets SIGINT on its process group in the
// guest, as Ctrl-C at a terminal. A Claude Code session that waits for a
// message already has nothing to interrupt, and says so.
func (m *Manager) Interrupt(ctx context.Context, ref string) error {
	_, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return err
	}
	return r.interrupt()
}

// interruptRequest is Claude Code's stream-json control request that
// ends the current turn; id names it in the control_response.
func interruptRequest(id string) string {
	b, _ := json.Marshal(map[string]any{
		"type":       "control_request",
		"request_id": id,
		"request":    map[string]string{"subtype": "interrupt"},
	})
	return string(b)
}

func (r *run) interrupt() error {
	r.mu.Lock()
	sb, activity := r.sb, r.activity
	started := r.started
	r.mu.Unlock()
	if sb == nil || !started {
		return fmt.Errorf("session %s has no agent running yet: nothing to interrupt: %w", r.id, ErrState)
	}
	if r.claude && activity == ActivityWaiting {
		return fmt.Errorf("session %s is waiting for your message: there is no turn to interrupt: %w", r.id, ErrState)
	}
	if !r.claude {
		if err := sb.Interrupt(); err != nil {
			return fmt.Errorf("interrupt session %s: %w", r.id, err)
		}
		r.systemLine("interrupted: SIGINT sent to the agent's process group")
		r.setActivity(r.ctx, ActivityWaiting, ReasonInterrupted)
		return nil
	}
	r.mu.Lock()
	r.interrupts++
	id := "sandbar-interrupt-" + strconv.Itoa(r.interrupts)
	r.interruptAt = time.Now()
	r.mu.Unlock()
	if err := sb.Chat(interruptRequest(id)); err != nil {
		r.mu.Lock()
		r.interruptAt = time.Time{}
		r.mu.Unlock()
		return fmt.Errorf("interrupt session %s: %w", r.id, err)
	}
	r.systemLine("interrupt asked of the agent")
	return nil
}

// takeInterrupt reports whether a turn's end answers an interrupt, and
// forgets the interrupt: the next turn's end is the next turn's.
func (r *run) takeInterrupt() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	asked := !r.interruptAt.IsZero()
	r.interruptAt = time.Time{}
	return asked
}
