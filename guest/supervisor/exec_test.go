package supervisor

import (
	"bytes"
	"crypto/sha256"
	"strconv"
	"testing"
	"time"

	"sandbar/guest/protocol"
)

func TestExecConcurrent(t *testing.T) {
	h := newHost(t)
	dir := t.TempDir()
	// Each exec waits until all three have checked in, so they finish only
	// if they run at the same time.
	script := `touch "$ID"; n=0; while [ "$(ls | wc -l)" -lt 3 ]; do sleep 0.01; n=$((n+1)); [ $n -gt 1000 ] && exit 9; done; echo "done $ID"`
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		h.send(protocol.Command{Cmd: protocol.CmdExec, ID: id, Argv: []string{"sh", "-c", script},
			Cwd: dir, Env: map[string]string{"ID": id}, Timeout: 20000})
	}
	out := map[string]string{}
	results := map[string]protocol.Event{}
	for len(results) < 3 {
		e := h.next()
		switch e.Ev {
		case protocol.EvExecStdout:
			if _, done := results[e.ID]; done {
				t.Errorf("output for %s after its result", e.ID)
			}
			out[e.ID] += string(e.Payload())
		case protocol.EvExecResult:
			results[e.ID] = e
		default:
			t.Fatalf("unexpected %+v", e)
		}
	}
	for _, id := range ids {
		if r := results[id]; r.Code != 0 || out[id] != "done "+id+"\n" {
			t.Errorf("exec %s: result %+v output %q", id, r, out[id])
		}
	}
}

func TestExecTimeoutAndKill(t *testing.T) {
	h := newHost(t)
	began := time.Now()
	_, _, res := h.execOutput(protocol.Command{ID: "t", Argv: []string{"sleep", "10"}, Timeout: 200})
	if !res.TimedOut || res.Signal != "SIGKILL" || res.Code != 137 {
		t.Errorf("timed out exec: %+v, want timed_out and SIGKILL", res)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("a 200ms timeout took %v", took)
	}

	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "k", Argv: []string{"sh", "-c", "sleep 10; sleep 10"}})
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "k", Argv: []string{"true"}})
	if e := h.next(); e.Ev != protocol.EvError || e.ID != "k" {
		t.Errorf("duplicate exec id: %+v, want error", e)
	}
	h.send(protocol.Command{Cmd: protocol.CmdExecKill, ID: "k"})
	res = h.until(protocol.EvExecResult, "k")[0]
	if res.TimedOut || res.Signal != "SIGKILL" {
		t.Errorf("killed exec: %+v", res)
	}
	h.send(protocol.Command{Cmd: protocol.CmdExecKill, ID: "k"})
	if e := h.next(); e.Ev != protocol.EvError || e.ID != "k" {
		t.Errorf("kill of a finished exec: %+v, want error", e)
	}
}

func TestExecEnvCwdStdin(t *testing.T) {
	h := newHost(t)
	h.start("s", "cat", map[string]string{"FROM_START": "st", "OVER": "start"})
	cwd := t.TempDir()
	tests := []struct {
		name       string
		cmd        protocol.Command
		wantOut    string
		wantErr    string
		wantCode   int
		wantStartE bool
	}{
		{"env layers and cwd", protocol.Command{Argv: []string{"sh", "-c", `echo "$FROM_START $OVER $MINE $(pwd) $TERM"`},
			Cwd: cwd, Env: map[string]string{"MINE": "m", "OVER": "exec"}}, "st exec m " + cwd + " dumb\n", "", 0, false},
		{"default cwd is the workdir", protocol.Command{Argv: []string{"pwd"}}, h.ws + "\n", "", 0, false},
		{"stdin", protocol.Command{Argv: []string{"sh", "-c", "cat; echo oops >&2; exit 4"}, Stdin: "abc\x00\xff"},
			"abc\x00\xff", "oops\n", 4, false},
		{"root user", protocol.Command{Argv: []string{"sh", "-c", "echo $USER"}, User: protocol.UserRoot}, "root\n", "", 0, false},
		{"missing program", protocol.Command{Argv: []string{"no-such-prog-xyz"}}, "", "", -1, true},
		{"bad cwd", protocol.Command{Argv: []string{"true"}, Cwd: "/no/such/dir"}, "", "", -1, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cmd.ID = "x" + strconv.Itoa(i)
			tt.cmd.SetStdin([]byte(tt.cmd.Stdin))
			out, errOut, res := h.execOutput(tt.cmd)
			if string(out) != tt.wantOut || string(errOut) != tt.wantErr || res.Code != tt.wantCode || (res.Error != "") != tt.wantStartE {
				t.Errorf("got out %q err %q result %+v\nwant out %q err %q code %d", out, errOut, res, tt.wantOut, tt.wantErr, tt.wantCode)
			}
		})
	}
}

func TestExecBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB burst (25 MB under -race): skipped with -short")
	}
	h := newHost(t)
	const n = burstLines
	began := time.Now()
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "burst", Argv: []string{"seq", "1", strconv.Itoa(n)}})
	got := sha256.New()
	size := 0
	for {
		e := h.next()
		if e.ID != "burst" {
			t.Fatalf("unexpected %+v", e)
		}
		if e.Ev == protocol.EvExecResult {
			if e.Code != 0 {
				t.Fatalf("seq: %+v", e)
			}
			break
		}
		p := e.Payload()
		size += len(p)
		got.Write(p)
	}
	took := time.Since(began)
	want := sha256.New()
	var buf []byte
	wantSize := 0
	for i := 1; i <= n; i++ {
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '\n')
		if len(buf) > 1<<16 || i == n {
			want.Write(buf)
			wantSize += len(buf)
			buf = buf[:0]
		}
	}
	if size != wantSize || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("got %d bytes, want %d, or they differ", size, wantSize)
	}
	t.Logf("%d bytes in %v: %.0f MB/s", size, took, float64(size)/1e6/took.Seconds())
}

func TestExecBackgroundChildHoldsOutput(t *testing.T) {
	h := newHost(t)
	began := time.Now()
	// The sleep keeps stdout open long after sh exits; the result must not
	// wait for it.
	out, _, res := h.execOutput(protocol.Command{ID: "bg", Argv: []string{"sh", "-c", "sleep 6 & echo started"}})
	if string(out) != "started\n" || res.Code != 0 {
		t.Errorf("got %q %+v", out, res)
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("exec:result took %v: it waited for the background child", took)
	}
}
