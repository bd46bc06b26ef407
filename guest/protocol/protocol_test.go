package protocol

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// testCACert is a CA certificate (Sandbar test CA, P-256) for the
// round trips, which must be the same at every call.
const testCACert = `-----BEGIN CERTIFICATE-----
MIIBZTCCAQugAwIBAgIBATAKBggqhkjOPQQDAjAaMRgwFgYDVQQDEw9TYW5kYmFy
IHRlc3QgQ0EwHhcNMjYwMTAxMDAwMDAwWhcNMzYwMTAxMDAwMDAwWjAaMRgwFgYD
VQQDEw9TYW5kYmFyIHRlc3QgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATe
yTFUMRiUBD54kLHTVlHyTBx62L8PZ32kQDDGUM9wooWSdTp5wtqifrqf3ZuHIjaA
PsvtZ79gqfZyGSKX5STIo0IwQDAOBgNVHQ8BAf8EBAMCAgQwDwYDVR0TAQH/BAUw
AwEB/zAdBgNVHQ4EFgQUhEJsVFV4WtZqLxn65JJb8A5yiw4wCgYIKoZIzj0EAwID
SAAwRQIge5Zof5NcOc8wDOWDkL14Rmyyxb7AGY8FTuzVcNrTuAECIQD2ddeleo6p
gpYrSSc/xfVQhn4InXYmZYUIyK1yQri9bQ==
-----END CERTIFICATE-----
`

func allCommands() []Command {
	return []Command{
		{Cmd: CmdStart, ID: "s1", Workdir: "/workspace/x", Branch: "sandbar/abc",
			Agent: &Agent{Command: "claude", Args: []string{"-p", "--verbose"}, User: UserRoot},
			Env:   map[string]string{"ANTHROPIC_API_KEY": "k", "GITHUB_TOKEN": "t"},
			Git:   &GitIdentity{Name: "A \"B\" C", Email: "a@example.org"},
			Time:  time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano(), StatsInterval: 500,
			CACert: testCACert},
		{Cmd: CmdChat, ID: "c1", Text: "hello <world> & \"you\"\n"},
		{Cmd: CmdStop, Grace: 1500},
		{Cmd: CmdExec, ID: "e1", Argv: []string{"sh", "-c", "echo hi"}, Cwd: "/tmp",
			Env: map[string]string{"A": "b"}, User: UserAgent, Timeout: 200, Stdin: "in\x00put"},
		{Cmd: CmdExec, ID: "e2", Argv: []string{"cat"}, StdinB64: []byte{0xff, 0}},
		{Cmd: CmdExecKill, ID: "e1"},
		{Cmd: CmdSetTime, Time: 1},
		{Cmd: CmdShutdown},
		{Cmd: CmdInterrupt, ID: "i"},
	}
}

func allEvents() []Event {
	return []Event{
		{Ev: EvReady, Version: Version, Kernel: "6.12.0-1-arm64", CPUs: 4, Memory: 4 << 30},
		{Ev: EvReady, Version: Version, Kernel: "6.1.0-50-amd64", CPUs: 1, Memory: 1 << 30, NetError: "DHCP on eth0: no offer within 3s"},
		{Ev: EvAgentStarted, ID: "s1", PID: 42},
		{Ev: EvAgentStdout, Data: "line \"one\" ✓"},
		{Ev: EvAgentStderr, Data: "part", More: true},
		{Ev: EvAgentExit, Code: 143, Signal: "SIGTERM"},
		{Ev: EvExecStdout, ID: "e1", Data: "chunk\n"},
		{Ev: EvExecStderr, ID: "e1", B64: []byte{0xff, 0, 0xfe}},
		{Ev: EvExecResult, ID: "e1", Code: 137, Signal: "SIGKILL", TimedOut: true},
		{Ev: EvExecResult, ID: "e2", Code: -1, Error: "exec: \"nope\": not found"},
		{Ev: EvStats, CPU: 12.5, MemUsed: 1 << 20, MemTotal: 4 << 30, Procs: 17,
			Disk: &Disks{Workspace: Usage{Used: 1, Total: 2}, Scratch: Usage{Used: 3, Total: 4}}},
		{Ev: EvError, ID: "c1", Cmd: CmdChat, Message: "no agent is running: send start first"},
		{Ev: EvPorts},
		{Ev: EvPorts, Ports: []Port{{Port: 22}, {Port: 5173, Loopback: true}, {Port: 65535}}, Truncated: true},
	}
}

func TestRoundTripCommands(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, c := range allCommands() {
		if err := w.SendCommand(c); err != nil {
			t.Fatalf("SendCommand(%s): %v", c.Cmd, err)
		}
	}
	r := NewReader(&buf)
	for _, want := range allCommands() {
		got, err := r.ReadCommand()
		if err != nil {
			t.Fatalf("ReadCommand (want %s): %v", want.Cmd, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip %s:\n got %+v\nwant %+v", want.Cmd, got, want)
		}
	}
	if _, err := r.ReadCommand(); err != io.EOF {
		t.Fatalf("after last command: err = %v, want io.EOF", err)
	}
}

func TestRoundTripEvents(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	fixed := time.UnixMilli(1_700_000_000_123)
	w.now = func() time.Time { return fixed }
	for _, e := range allEvents() {
		if err := w.Send(e); err != nil {
			t.Fatalf("Send(%s): %v", e.Ev, err)
		}
	}
	r := NewReader(&buf)
	for i, want := range allEvents() {
		got, err := r.ReadEvent()
		if err != nil {
			t.Fatalf("ReadEvent (want %s): %v", want.Ev, err)
		}
		want.Seq, want.TS = uint64(i+1), fixed.UnixMilli()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip %s:\n got %+v\nwant %+v", want.Ev, got, want)
		}
		if !got.Time().Equal(fixed) {
			t.Errorf("%s: Time() = %v, want %v", want.Ev, got.Time(), fixed)
		}
	}
}

func TestSeqConcurrent(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewWriter(pw)
	const senders, each = 8, 500
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				ev := Event{Ev: EvExecStdout, ID: "e", Data: strings.Repeat("x", g*i%300)}
				if err := w.Send(ev); err != nil {
					t.Errorf("Send: %v", err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); pw.Close() }()
	r := NewReader(pr)
	var last uint64
	n := 0
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("ReadEvent: %v", err)
		}
		if e.Seq != last+1 {
			t.Fatalf("seq %d follows %d", e.Seq, last)
		}
		last = e.Seq
		n++
	}
	if n != senders*each {
		t.Fatalf("read %d events, want %d", n, senders*each)
	}
}

func TestSplitAndJoin(t *testing.T) {
	text := []byte(strings.Repeat("abcdefghij \"quoted\" é✓<>\u2028 back\\slash\t\x01", 5<<20/40))
	binary := bytes.Repeat([]byte{0xff, 'a', 0, 0x80}, 5<<20/4)
	tests := []struct {
		name string
		ev   string
		line []byte
	}{
		{"text stdout", EvAgentStdout, text},
		{"binary stderr", EvAgentStderr, binary},
		{"plain ascii", EvAgentStdout, bytes.Repeat([]byte("0123456789"), 5<<20/10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			ev := Event{Ev: tt.ev}
			ev.SetPayload(tt.line)
			if wantB64 := tt.name == "binary stderr"; (ev.B64 != nil) != wantB64 {
				t.Fatalf("SetPayload chose b64=%v, want %v", ev.B64 != nil, wantB64)
			}
			if err := w.Send(ev); err != nil {
				t.Fatalf("Send: %v", err)
			}
			for _, l := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
				if len(l) > MaxLine {
					t.Fatalf("a line has %d bytes, more than MaxLine", len(l))
				}
			}
			r := NewReader(&buf)
			var j LineJoiner
			pieces := 0
			for {
				e, err := r.ReadEvent()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("ReadEvent: %v", err)
				}
				pieces++
				if line, ok := j.Add(e); ok {
					if !bytes.Equal(line, tt.line) {
						t.Fatalf("reassembled %d bytes differ from the %d sent", len(line), len(tt.line))
					}
					if pieces < 2 {
						t.Fatalf("a %d byte line came in %d event", len(tt.line), pieces)
					}
					return
				}
			}
			t.Fatalf("no complete line after %d pieces; %d bytes pending", pieces, j.Pending())
		})
	}
}

func TestExecChunkSplitHasNoMore(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	chunk := bytes.Repeat([]byte("\x00"), 2<<20) // 6x escape growth
	ev := Event{Ev: EvExecStdout, ID: "e"}
	ev.SetPayload(chunk)
	if err := w.Send(ev); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&buf)
	var got []byte
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.More {
			t.Fatalf("exec piece carries more")
		}
		got = append(got, e.Payload()...)
	}
	if !bytes.Equal(got, chunk) {
		t.Fatalf("got %d bytes back, want %d", len(got), len(chunk))
	}
}

func TestTooLongNonData(t *testing.T) {
	w := NewWriter(io.Discard)
	err := w.Send(Event{Ev: EvError, Message: strings.Repeat("m", MaxLine)})
	if !errors.Is(err, ErrTooLong) {
		t.Fatalf("Send huge error event: %v, want ErrTooLong", err)
	}
	err = w.SendCommand(Command{Cmd: CmdChat, Text: strings.Repeat("m", MaxLine)})
	if !errors.Is(err, ErrTooLong) {
		t.Fatalf("SendCommand huge chat: %v, want ErrTooLong", err)
	}
}

func TestReaderBadLines(t *testing.T) {
	long := `{"cmd":"chat","text":"` + strings.Repeat("x", 3<<20) + `"}`
	tests := []struct {
		name    string
		line    string
		want    error
		wantID  string
		wantCmd string
	}{
		{"too long", long, ErrTooLong, "", ""},
		{"not json", `{"cmd":"chat",`, ErrMalformed, "", ""},
		{"garbage", "\x00\xff hello", ErrMalformed, "", ""},
		{"wrong type", `{"cmd":"stop","id":"7","grace":"soon"}`, ErrMalformed, "7", CmdStop},
		{"unknown cmd", `{"cmd":"dance","id":"9"}`, ErrUnknown, "9", "dance"},
		{"no cmd", `{"id":"3"}`, ErrMalformed, "3", ""},
		{"exec without argv", `{"cmd":"exec","id":"4"}`, ErrMalformed, "4", CmdExec},
		{"start with a bad ca_cert", `{"cmd":"start","id":"5","agent":{"command":"claude"},"ca_cert":"-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n"}`, ErrMalformed, "5", CmdStart},
		{"trailing garbage", `{"cmd":"stop"} x`, ErrMalformed, "", ""},
		{"array", `[1,2]`, ErrMalformed, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := "\n  \n" + tt.line + "\n\r\n" + `{"cmd":"chat","id":"ok","text":"next"}` + "\n"
			r := NewReader(iotest.HalfReader(strings.NewReader(in)))
			_, err := r.ReadCommand()
			if !errors.Is(err, tt.want) || !IsRecoverable(err) {
				t.Fatalf("err = %v, want recoverable %v", err, tt.want)
			}
			var le *LineError
			errors.As(err, &le)
			if le.ID != tt.wantID || le.Cmd != tt.wantCmd || le.Line != 3 {
				t.Errorf("LineError{ID:%q Cmd:%q Line:%d}, want ID %q Cmd %q Line 3", le.ID, le.Cmd, le.Line, tt.wantID, tt.wantCmd)
			}
			c, err := r.ReadCommand()
			if err != nil || c.ID != "ok" || c.Text != "next" {
				t.Fatalf("next line: %+v, %v; want the chat", c, err)
			}
			if _, err := r.ReadCommand(); err != io.EOF || IsRecoverable(err) {
				t.Fatalf("at end: %v, want io.EOF", err)
			}
		})
	}
}

func TestReaderLastLineWithoutNewline(t *testing.T) {
	r := NewReader(strings.NewReader(`{"cmd":"shutdown"}`))
	c, err := r.ReadCommand()
	if err != nil || c.Cmd != CmdShutdown {
		t.Fatalf("got %+v, %v", c, err)
	}
	if _, err := r.ReadCommand(); err != io.EOF {
		t.Fatalf("then %v, want io.EOF", err)
	}
}

func TestReaderUnknownEvent(t *testing.T) {
	r := NewReader(strings.NewReader(`{"ev":"agent:dance","seq":1,"ts":1}` + "\n"))
	_, err := r.ReadEvent()
	if !errors.Is(err, ErrUnknown) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrUnknown", err)
	}
}

// errAfter returns its data, then a non-EOF error, forever.
type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, e.err
	}
	return n, err
}

func TestReaderIOErrorIsFinal(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(&errAfter{r: strings.NewReader(`{"cmd":"stop"}` + "\n" + `{"cmd":"sh`), err: boom})
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadCommand(); !IsRecoverable(err) {
		t.Fatalf("truncated line: %v, want recoverable", err)
	}
	for range 2 {
		if _, err := r.ReadCommand(); err != boom || IsRecoverable(err) {
			t.Fatalf("then %v, want boom", err)
		}
	}
}

func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, c := range allCommands() {
		buf.Reset()
		_ = w.SendCommand(c)
		f.Add(append([]byte{}, buf.Bytes()...))
	}
	for _, e := range allEvents() {
		buf.Reset()
		_ = w.Send(e)
		f.Add(append([]byte{}, buf.Bytes()...))
	}
	for _, s := range []string{"", "\n", "{", `{"cmd":"exec","id":"x","argv":[""]}`,
		"\xff\xfe\n{}\n", `{"cmd":"chat","text":"` + strings.Repeat("y", 200) + "\"}\n{\"cmd\":\"stop\"}",
		`{"ev":"stats","disk":{"workspace":{"used":-1}}}`, `{"cmd":"start","agent":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A small bound exercises the too-long path with small inputs.
		for _, max := range []int{MaxLine, 64} {
			var src io.Reader = bytes.NewReader(data)
			if len(data) > 0 && data[0]&1 == 1 {
				src = iotest.OneByteReader(src)
			}
			r := newReaderMax(src, max)
			calls := 0
			for ; ; calls++ {
				if calls > len(data)+1 {
					t.Fatalf("no io.EOF after %d calls on %d bytes", calls, len(data))
				}
				c, err := r.ReadCommand()
				if err == io.EOF {
					break
				}
				if err != nil {
					if !IsRecoverable(err) {
						t.Fatalf("unrecoverable %v before EOF", err)
					}
					continue
				}
				if verr := c.Validate(); verr != nil {
					t.Fatalf("returned invalid command %+v: %v", c, verr)
				}
				if err := NewWriter(io.Discard).SendCommand(c); err != nil && !errors.Is(err, ErrTooLong) {
					t.Fatalf("cannot re-encode %+v: %v", c, err)
				}
			}
			er := newReaderMax(bytes.NewReader(data), max)
			for calls = 0; ; calls++ {
				if calls > len(data)+1 {
					t.Fatalf("no io.EOF after %d event calls on %d bytes", calls, len(data))
				}
				e, err := er.ReadEvent()
				if err == io.EOF {
					break
				}
				if err != nil {
					if !IsRecoverable(err) {
						t.Fatalf("unrecoverable %v before EOF", err)
					}
					continue
				}
				if verr := e.Validate(); verr != nil {
					t.Fatalf("returned invalid event %+v: %v", e, verr)
				}
			}
		}
	})
}

func TestSetPayload(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		wantB64 bool
	}{
		{"empty", []byte{}, false},
		{"text", []byte("hello \"world\"\n\ttabbed é"), false},
		{"invalid utf-8", []byte("ab\xffcd"), true},
		{"mostly control bytes", bytes.Repeat([]byte{0, 1, 'a'}, 100), true},
		{"some control bytes", []byte("abcdefghijklmnop\x1b[0m"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Event
			e.SetPayload(tt.in)
			if (e.B64 != nil) != tt.wantB64 || !bytes.Equal(e.Payload(), tt.in) {
				t.Errorf("SetPayload(%q): data %q b64 %q", tt.in, e.Data, e.B64)
			}
			var c Command
			c.SetStdin(tt.in)
			if !bytes.Equal(c.StdinBytes(), tt.in) {
				t.Errorf("SetStdin(%q) gives back %q", tt.in, c.StdinBytes())
			}
		})
	}
}
