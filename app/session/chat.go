package session

import (
	"context"
)

// Chat sends text to the agent's input.
func (m *Manager) Chat(ctx context.Context, ref, text string) error {
	_, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return err
	}
	return r.chat(text)
}
