package store

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Environment of the helper process TestSecondProcess starts.
const (
	helperDBEnv      = "SANDBAR_STORE_HELPER_DB"
	helperSessionEnv = "SANDBAR_STORE_HELPER_SESSION"
	helperBatches    = 300 // of helperBatchSize lines
	helperBatchSize  = 10
	helperReady      = "writing"
)

// checkLines fails unless the session's lines are numbered 1..want with
// none missing or doubled.
func checkLines(t *testing.T, s *Store, id string, want int) {
	t.Helper()
	l := mustLogs(t, s, id)
	if len(l) != want {
		t.Errorf("%d log lines, want %d", len(l), want)
		return
	}
	for i, line := range l {
		if line.Seq != int64(i+1) {
			t.Errorf("line %d has seq %d: numbering has a gap or a double", i, line.Seq)
			return
		}
	}
}

// TestTwoHandles: two handles on one file, as the GUI and a CLI have,
// update one session and append to its log at once: no update is lost,
// no line is lost or numbered twice, and nothing fails with "database is
// locked".
func TestTwoHandles(t *testing.T) {
	p := dbPath(t)
	a := openStore(t, p)
	b := openStore(t, p)
	_, x := seed(t, a)
	ctx := context.Background()
	const updates, batches, size = 200, 100, 10
	var wg sync.WaitGroup
	errs := make(chan error, 4*(updates+batches))
	stop := make(chan struct{})
	for _, s := range []*Store{a, b} {
		wg.Go(func() {
			for range updates {
				_, err := s.UpdateSession(ctx, x.ID, func(v *Session) error {
					v.Timings["count"]++
					return nil
				})
				if err != nil {
					errs <- fmt.Errorf("update: %w", err)
				}
			}
		})
		wg.Go(func() {
			for range batches {
				lines := make([]LogLine, size)
				for i := range lines {
					lines[i] = LogLine{Stream: "stdout", Time: time.Now(), Text: "x"}
				}
				if err := s.AppendLogs(ctx, x.ID, lines); err != nil {
					errs <- fmt.Errorf("append: %w", err)
				}
			}
		})
	}
	// A reader, as the GUI tailing the log, meanwhile.
	var reader sync.WaitGroup
	reader.Go(func() {
		var after int64
		for {
			select {
			case <-stop:
				return
			default:
			}
			l, err := b.Logs(ctx, x.ID, after, 50)
			if err != nil {
				errs <- fmt.Errorf("read: %w", err)
				return
			}
			if len(l) > 0 {
				after = l[len(l)-1].Seq
			}
			if _, err := a.Sessions(ctx, SessionFilter{}); err != nil {
				errs <- fmt.Errorf("list: %w", err)
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	reader.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	y, err := a.Session(ctx, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if y.Timings["count"] != 2*updates {
		t.Errorf("count %d after %d updates: updates were lost", y.Timings["count"], 2*updates)
	}
	checkLines(t, b, x.ID, 2*batches*size)
}

// TestSecondProcess: another process (this test binary again, running
// TestHelperWriter) appends to a session's log and updates it while this
// one does the same; both succeed and nothing is lost.
func TestSecondProcess(t *testing.T) {
	p := dbPath(t)
	s := openStore(t, p)
	_, x := seed(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperDBEnv+"="+p, helperSessionEnv+"="+x.ID)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the other process is writing, so that the two overlap.
	out := bufio.NewReader(stdout)
	for {
		line, err := out.ReadString('\n')
		if line == helperReady+"\n" {
			break
		}
		if err != nil {
			rest, _ := io.ReadAll(out)
			cmd.Wait()
			t.Fatalf("the writer process never said %q: %v\n%s%s%s", helperReady, err, line, rest, stderr.String())
		}
	}
	var drained sync.WaitGroup
	var rest []byte
	drained.Go(func() { rest, _ = io.ReadAll(out) })

	const updates, batches = 200, 100
	for i := range updates {
		if _, err := s.UpdateSession(ctx, x.ID, func(v *Session) error {
			v.Timings["parent"]++
			v.Reason = "update " + strconv.Itoa(i)
			return nil
		}); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if i%2 == 0 {
			if err := s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "system", Text: "from the parent"}}); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
	}
	drained.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the writer process: %v\n%s%s", err, rest, stderr.String())
	}
	if !bytes.Contains(rest, []byte("PASS")) {
		t.Fatalf("the writer process did not pass:\n%s%s", rest, stderr.String())
	}
	y, err := s.Session(ctx, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if y.Timings["parent"] != updates || y.Timings["child"] != helperBatches {
		t.Errorf("counts: parent %d of %d, child %d of %d: updates were lost", y.Timings["parent"], updates, y.Timings["child"], helperBatches)
	}
	checkLines(t, s, x.ID, batches+helperBatches*helperBatchSize)
}

// TestConcurrentOpensAcrossProcesses: several processes open the same new
// file at the same moment, as the GUI and CLI commands started together
// on a first run would: all of them get a usable database.
func TestConcurrentOpensAcrossProcesses(t *testing.T) {
	p := dbPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	type child struct {
		cmd   *exec.Cmd
		start io.WriteCloser
		out   bytes.Buffer
	}
	children := make([]*child, 4)
	for i := range children {
		c := &child{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), helperDBEnv+"="+p) // no session: open only
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		var err error
		if c.start, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	// Each child waits on its standard input; closing them all starts
	// them together.
	for _, c := range children {
		c.start.Close()
	}
	s := openStore(t, p)
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil || !bytes.Contains(c.out.Bytes(), []byte("PASS")) {
			t.Errorf("process %d: %v\n%s", i, err, c.out.String())
		}
	}
	if v, err := s.version(ctx, s.db); err != nil || v != latestVersion() {
		t.Errorf("schema v%d (%v), want v%d", v, err, latestVersion())
	}
}

// TestHelperWriter is the other process of TestSecondProcess and
// TestConcurrentOpensAcrossProcesses; run alone it does nothing.
func TestHelperWriter(t *testing.T) {
	p, id := os.Getenv(helperDBEnv), os.Getenv(helperSessionEnv)
	if p == "" {
		t.Skip("the other process of TestSecondProcess and TestConcurrentOpensAcrossProcesses")
	}
	if id == "" {
		io.Copy(io.Discard, os.Stdin) // wait for the go
		s, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Settings(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	s, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range helperBatches {
		lines := make([]LogLine, helperBatchSize)
		for j := range lines {
			lines[j] = LogLine{Stream: "stderr", Time: time.Now(), Text: fmt.Sprintf("from the other process, %d.%d", i, j)}
		}
		if err := s.AppendLogs(ctx, id, lines); err != nil {
			t.Fatalf("append batch %d: %v", i, err)
		}
		if _, err := s.UpdateSession(ctx, id, func(v *Session) error {
			v.Timings["child"]++
			return nil
		}); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if i == 0 {
			os.Stdout.WriteString(helperReady + "\n")
		}
	}
}
