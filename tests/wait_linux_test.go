//go:build linux

package tests

import "time"

// waitUntil checks cond every interval until it holds or within has
// passed, and reports whether it held. It is how these tests wait for
// what another process does (a session's state, a line in its log, a
// process ending, a file the engine writes): none of those sends the test
// an event, so the condition is polled, always under a deadline. The
// caller fails with what it last saw, which says what did not happen.
func waitUntil(within, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}
