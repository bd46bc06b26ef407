package store

// State is where a session is in its life. The session manager
// (app/session) decides the moves between states; the store only keeps
// the value.
type State string

// Session states, persisted in the sessions table.
const (
	StateProvisioning State = "provisioning" // building its workspace
	StateBooting      State = "booting"      // the VM is starting
	StateRunning      State = "running"      // the agent runs (Activity: working or waiting)
	StateStopping     State = "stopping"
	StateStopped      State = "stopped"
	StateFailed       State = "failed"
	StateInterrupted  State = "interrupted" // Sandbar went away while it ran; restartable
	// StateSuspended: its running VM was saved to its directory and
	// ended; a resume brings it back with its processes alive. It has no
	// VM (not Live) and its run is not over (not Ended).
	StateSuspended State = "suspended"
	// StateDamaged is never written: it is what a row whose content does
	// not parse reads as (Session.Damaged says which columns).
	StateDamaged State = "damaged"
)

// known reports whether s is a state Sandbar writes.
func (s State) known() bool {
	switch s {
	case StateProvisioning, StateBooting, StateRunning, StateStopping, StateStopped, StateFailed, StateInterrupted, StateSuspended:
		return true
	}
	return false
}

// LiveStates are the states of a session that has, or is getting, a VM.
var LiveStates = []State{StateProvisioning, StateBooting, StateRunning, StateStopping}

// Live reports whether a session in state s has (or is getting) a VM.
func (s State) Live() bool {
	switch s {
	case StateProvisioning, StateBooting, StateRunning, StateStopping:
		return true
	}
	return false
}

// Ended reports whether s is a final state: the session's run is over.
func (s State) Ended() bool {
	switch s {
	case StateStopped, StateFailed, StateInterrupted:
		return true
	}
	return false
}
