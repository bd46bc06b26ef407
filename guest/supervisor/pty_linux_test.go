package supervisor

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandbar/guest/protocol"
)

// output reads exec id's stdout until it matches re, and returns all of
// it so far; the exec ending first fails the test.
func (h *host) output(id string, out *bytes.Buffer, re *regexp.Regexp) []string {
	h.t.Helper()
	for !re.Match(out.Bytes()) {
		e := h.next()
		switch {
		case e.ID != id:
		case e.Ev == protocol.EvExecStdout:
			out.Write(e.Payload())
		case e.Ev == protocol.EvExecResult, e.Ev == protocol.EvError:
			h.t.Fatalf("exec %s ended (%+v) before printing %v; it printed %q", id, e, re, out)
		}
	}
	return re.FindStringSubmatch(out.String())
}

// rest collects exec id's stdout until its result.
func (h *host) rest(id string, out *bytes.Buffer) protocol.Event {
	h.t.Helper()
	for {
		e := h.next()
		switch {
		case e.ID != id:
		case e.Ev == protocol.EvExecStdout:
			out.Write(e.Payload())
		case e.Ev == protocol.EvExecResult:
			return e
		case e.Ev == protocol.EvError:
			h.t.Fatalf("exec %s: error %s", id, e.Message)
		}
	}
}

func (h *host) stdin(id, s string) {
	h.t.Helper()
	h.send(protocol.Command{Cmd: protocol.CmdExecStdin, ID: id, Stdin: s})
}

func TestReadyAnnouncesPTY(t *testing.T) {
	h := newHost(t)
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "p", Argv: []string{"true"}, PTY: true})
	if r := h.rest("p", &bytes.Buffer{}); r.Code != 0 || r.Error != "" {
		t.Fatalf("a PTY exec of true: %+v", r)
	}
}

func TestPTYSizeResizeAndTTY(t *testing.T) {
	h := newHost(t)
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "p", Argv: []string{"sh"}, PTY: true, Rows: 30, Cols: 100, Term: "vt100"})
	var out bytes.Buffer
	h.stdin("p", "stty size; echo T=$TERM\n")
	t.Cleanup(func() { t.Logf("the terminal printed %q", out.String()) })
	// A prompt may precede the output on its line.
	h.output("p", &out, regexp.MustCompile(`30 100\r?\n(.|\n)*T=vt100`))
	h.send(protocol.Command{Cmd: protocol.CmdExecResize, ID: "p", Rows: 41, Cols: 123})
	out.Reset()
	h.stdin("p", "stty size; tty; exit 3\n")
	res := h.rest("p", &out)
	if res.Code != 3 {
		t.Errorf("exit 3 in the PTY: %+v", res)
	}
	if !regexp.MustCompile(`41 123\r?\n`).Match(out.Bytes()) {
		t.Errorf("stty size after resizing to 41×123 printed %q", out.String())
	}
	if !regexp.MustCompile(`(?m)^/dev/pts/[0-9]+\r?$`).Match(out.Bytes()) {
		t.Errorf("tty printed %q, want /dev/pts/N", out.String())
	}
}

func TestPTYCtrlCInterruptsSleep(t *testing.T) {
	h := newHost(t)
	began := time.Now()
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "s", Argv: []string{"sleep", "100"}, PTY: true})
	h.stdin("s", "\x03")
	res := h.rest("s", &bytes.Buffer{})
	if res.Signal != "SIGINT" || res.Code != 130 {
		t.Errorf("sleep after ^C: %+v, want SIGINT", res)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("^C took %v to end sleep 100", took)
	}
}

// An interactive shell survives ^C: only its foreground job is
// interrupted, and the shell reads on.
func TestPTYCtrlCInShell(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	h := newHost(t)
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "b", Argv: []string{"bash", "--norc", "-i"}, PTY: true})
	var out bytes.Buffer
	t.Cleanup(func() { t.Logf("the terminal printed %q", out.String()) })
	// The quotes keep the echoed command line from matching. The job
	// prints only once it is the terminal's foreground, so ^C reaches it.
	h.stdin("b", "sh -c 'echo sl\"\"eeping; exec sleep 100'\n")
	h.output("b", &out, regexp.MustCompile(`sleeping`))
	h.stdin("b", "\x03")
	h.stdin("b", "echo alive''=$?\n")
	h.output("b", &out, regexp.MustCompile(`alive=130`))
	h.stdin("b", "exit 7\n")
	if res := h.rest("b", &out); res.Code != 7 {
		t.Errorf("bash after exit 7: %+v", res)
	}
}

// exec:stdin's eof is the terminal's ^D, which ends a read at the start
// of a line.
func TestPTYEOF(t *testing.T) {
	h := newHost(t)
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "c", Argv: []string{"cat"}, PTY: true})
	h.stdin("c", "hello\n")
	h.send(protocol.Command{Cmd: protocol.CmdExecStdin, ID: "c", EOF: true})
	var out bytes.Buffer
	res := h.rest("c", &out)
	// The line comes back twice: the terminal's echo, then cat's.
	if res.Code != 0 || out.String() != "hello\r\nhello\r\n" {
		t.Errorf("cat in a PTY after eof: %+v, printed %q", res, out.String())
	}
}

func TestStdinOpenPipeAndAcks(t *testing.T) {
	h := newHost(t)
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "c", Argv: []string{"sh", "-c", "cat; echo done >&2"}, StdinOpen: true, Stdin: "first\n"})
	h.stdin("c", "second\n")
	bin := protocol.Command{Cmd: protocol.CmdExecStdin, ID: "c", EOF: true}
	bin.SetStdin([]byte{0xff, 0x00, '\n'})
	h.send(bin)
	var out, errOut bytes.Buffer
	var acked int64
	for {
		e := h.next()
		if e.ID != "c" {
			continue
		}
		switch e.Ev {
		case protocol.EvExecStdout:
			out.Write(e.Payload())
		case protocol.EvExecStderr:
			errOut.Write(e.Payload())
		case protocol.EvExecStdinAck:
			acked += e.N
		case protocol.EvError:
			t.Fatalf("error: %s", e.Message)
		}
		if e.Ev == protocol.EvExecResult {
			if e.Code != 0 {
				t.Errorf("result %+v", e)
			}
			break
		}
	}
	if want := "first\nsecond\n\xff\x00\n"; out.String() != want || errOut.String() != "done\n" {
		t.Errorf("cat printed %q and %q, want %q and done", out.String(), errOut.String(), want)
	}
	if acked != int64(len("first\nsecond\n\xff\x00\n")) {
		t.Errorf("acknowledged %d stdin bytes, want %d", acked, len(out.String()))
	}
}

func TestStdinWindowAndMisuse(t *testing.T) {
	h := newHost(t)
	// A program that never reads: a pipe takes 64 KiB, the queue the
	// window, and the next piece is refused rather than blocking the guest.
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "w", Argv: []string{"sleep", "100"}, StdinOpen: true})
	piece := strings.Repeat("x", protocol.MaxStdinPiece)
	refused := false
	for i := 0; i < (protocol.StdinWindow+pipeSize)/protocol.MaxStdinPiece+4 && !refused; i++ {
		h.stdin("w", piece)
		// Another command is answered at once: the loop is not stuck.
		h.send(protocol.Command{Cmd: protocol.CmdExecKill, ID: "nope"})
		for {
			e := h.next()
			if e.Ev == protocol.EvError && e.ID == "w" && strings.Contains(e.Message, "window") {
				refused = true
			}
			if e.Ev == protocol.EvError && e.ID == "nope" {
				break
			}
		}
	}
	if !refused {
		t.Fatal("stdin past the window was taken")
	}
	h.send(protocol.Command{Cmd: protocol.CmdExecKill, ID: "w"})
	h.rest("w", &bytes.Buffer{})

	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "n", Argv: []string{"sleep", "100"}})
	h.send(protocol.Command{Cmd: protocol.CmdExecResize, ID: "n", Rows: 10, Cols: 10})
	if e := h.next(); e.Ev != protocol.EvError || e.ID != "n" || !strings.Contains(e.Message, "pty") {
		t.Errorf("resize of a pipe exec: %+v, want an error naming pty", e)
	}
	h.send(protocol.Command{Cmd: protocol.CmdExecKill, ID: "n"})
}
