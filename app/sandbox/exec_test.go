package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/guest/protocol"
	"sandbar/vm/vmtest"
)

// syncBuffer is written on the Client's reader goroutine and read by the
// test; notify is signalled on each write.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	notify chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{notify: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the buffer matches re.
func (s *syncBuffer) waitFor(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(20 * time.Second)
	for !rx.MatchString(s.String()) {
		select {
		case <-s.notify:
		case <-deadline:
			t.Fatalf("the terminal never printed %q; it printed %q", re, s.String())
		}
	}
}

func bootTest(t *testing.T) *Sandbox {
	t.Helper()
	sb, err := Boot(context.Background(), &vmtest.Hypervisor{}, testImage(t), Options{Dir: t.TempDir(), Share: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Kill(); sb.Wait(context.Background()); sb.Client.Close() })
	return sb
}

func TestStartExecPTY(t *testing.T) {
	sb := bootTest(t)
	out := newSyncBuffer()
	p, err := sb.Client.StartExec(ExecRequest{Argv: []string{"sh"}, PTY: true, Rows: 20, Cols: 70}, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(p, "stty size\n")
	out.waitFor(t, `20 70\r\n`)
	if err := p.Resize(33, 99); err != nil {
		t.Fatal(err)
	}
	io.WriteString(p, "stty size; exit 5\n")
	res, err := p.Wait(context.Background())
	if err != nil || res.Code != 5 {
		t.Fatalf("Wait = %+v, %v; want code 5", res, err)
	}
	if !strings.Contains(out.String(), "33 99\r\n") {
		t.Errorf("after Resize(33, 99) stty printed %q", out.String())
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, ErrExited) {
		t.Errorf("Write after exit: %v, want ErrExited", err)
	}
}

// Several windows' worth of stdin go through: Write waits for the guest's
// acknowledgements instead of overrunning it.
func TestStartExecInteractiveStdinWindow(t *testing.T) {
	sb := bootTest(t)
	var out bytes.Buffer
	p, err := sb.Client.StartExec(ExecRequest{Argv: []string{"sh", "-c", "sleep 0.2; wc -c"}, Interactive: true}, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5*protocol.StdinWindow + 12345
	if k, err := p.Write(bytes.Repeat([]byte{0xff}, n)); k != n || err != nil {
		t.Fatalf("Write = %d, %v", k, err)
	}
	if err := p.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(context.Background())
	if err != nil || res.Code != 0 || strings.TrimSpace(out.String()) != "1323065" {
		t.Fatalf("wc -c of %d bytes: %q, %+v, %v", n, out.String(), res, err)
	}
}

// A guest that does not announce the feature gets no PTY request, and the
// error says what to do.
func TestStartExecOldGuest(t *testing.T) {
	hostEnd, guestEnd := net.Pipe()
	c := NewClient(hostEnd, ClientOptions{})
	defer c.Close()
	go func() {
		w := protocol.NewWriter(guestEnd)
		w.Send(protocol.Event{Ev: protocol.EvReady, Version: protocol.Version})
		io.Copy(io.Discard, guestEnd)
	}()
	if _, err := c.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := c.StartExec(ExecRequest{Argv: []string{"bash"}, PTY: true}, nil, nil)
	if !errors.Is(err, ErrNoPTY) || !strings.Contains(err.Error(), "sandbar image build") {
		t.Fatalf("PTY on an old guest: %v, want ErrNoPTY", err)
	}
}
