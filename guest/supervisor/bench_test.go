package supervisor

import (
	"strconv"
	"testing"

	"sandbar/guest/protocol"
)

// BenchmarkExecRoundTrip is one exec of `true`, command to result, over
// net.Pipe.
func BenchmarkExecRoundTrip(b *testing.B) {
	h := newHost(b)
	b.ResetTimer()
	for i := range b.N {
		id := strconv.Itoa(i)
		h.send(protocol.Command{Cmd: protocol.CmdExec, ID: id, Argv: []string{"true"}})
		if res := h.until(protocol.EvExecResult, id); res[len(res)-1].Code != 0 {
			b.Fatalf("true failed: %+v", res)
		}
	}
}

// BenchmarkStreamThroughput streams exec output through the codec and
// net.Pipe to the host: printable text, sent as JSON strings.
func BenchmarkStreamThroughput(b *testing.B) {
	h := newHost(b)
	const size = 64 << 20
	b.SetBytes(size)
	b.ResetTimer()
	total := 0
	for i := range b.N {
		id := strconv.Itoa(i)
		h.send(protocol.Command{Cmd: protocol.CmdExec, ID: id,
			Argv: []string{"sh", "-c", "head -c " + strconv.Itoa(size) + " /dev/zero | tr '\\0' a"}})
		for {
			e := h.next()
			if e.Ev == protocol.EvExecResult {
				break
			}
			total += len(e.Payload())
		}
	}
	b.ReportMetric(float64(total)/1e6/b.Elapsed().Seconds(), "MB/s")
}
