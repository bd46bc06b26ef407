package terminal

import "log"

// handleAPC ignores every application program command.
//
// Sandbar: upstream dispatched them to handlers registered in a
// package-level map (RegisterAPCHandler); nothing here registers one,
// and a guest's bytes must not reach a handler of the host, so the map
// is gone.
func (t *Terminal) handleAPC(code string) {
	if t.debug {
		log.Println("Ignored APC:", len(code), "bytes")
	}
}
