package protocol

// LineJoiner reassembles agent output lines that the guest split into
// several events. The zero value is ready to use. It keeps stdout and
// stderr apart; it is not safe for concurrent use.
//
// It trusts the guest: a guest that never ends a line makes it buffer
// without bound, so a host that distrusts the guest should cap the length
// of what Add returns by dropping the joiner.
type LineJoiner struct {
	partial map[string][]byte
}

// Add feeds one event. For the last piece of an agent:stdout or
// agent:stderr line it returns the whole line (without its newline) and
// true; for an earlier piece, or any other event, it returns nil and false.
func (j *LineJoiner) Add(ev Event) ([]byte, bool) {
	if ev.Ev != EvAgentStdout && ev.Ev != EvAgentStderr {
		return nil, false
	}
	if j.partial == nil {
		j.partial = make(map[string][]byte)
	}
	buf := append(j.partial[ev.Ev], ev.Payload()...)
	if ev.More {
		j.partial[ev.Ev] = buf
		return nil, false
	}
	delete(j.partial, ev.Ev)
	if buf == nil {
		buf = []byte{}
	}
	return buf, true
}

// Pending reports how many bytes wait for the rest of their line.
func (j *LineJoiner) Pending() int {
	n := 0
	for _, b := range j.partial {
		n += len(b)
	}
	return n
}
