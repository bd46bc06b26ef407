package qemu

import (
	"testing"

	"sandbar/guest/protocol"
)

// TestTrialMarker: the marker a trial boot looks for is the one the
// guest prints.
func TestTrialMarker(t *testing.T) {
	if TrialMarker != protocol.TrialMarker {
		t.Errorf("qemu looks for %q, sandbar-init prints %q", TrialMarker, protocol.TrialMarker)
	}
}
