package terminal

import "log"

// handleOSC ignores every operating system command.
//
// Sandbar: the bytes come from a coding agent's VM, which must not steer
// the host. Upstream set the window's title (OSC 0 and 2) and changed the
// host process's working directory to a path the guest named (OSC 7,
// os.Chdir); OSC 52 (clipboard), OSC 8 (links) and the rest were not
// implemented. Nothing here may act beyond drawing, so all are dropped;
// osc_test.go holds each one to that.
func (t *Terminal) handleOSC(code string) {
	if t.debug {
		log.Println("Ignored OSC:", len(code), "bytes")
	}
}
