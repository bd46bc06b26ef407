//go:build darwin

package vz

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"sandbar/vm/caplog"
)

// consoleMarker begins each console log file started after older console
// output was dropped.
const consoleMarker = "[sandbar: earlier console output trimmed]\n"

// consoleDrainWait bounds how long the console's last bytes are read
// once the VM has stopped.
const consoleDrainWait = 2 * time.Second

// console is the guest's serial console: the framework writes it into a
// pipe, and a goroutine copies the pipe into the capped log (this boot's
// console only). The guest gets no input (in is /dev/null).
type console struct {
	r, w, in *os.File
	done     chan struct{}
}

// openConsole makes the console's pipe and starts copying it when the
// plan has a console; nil when it has none.
func openConsole(p Plan, log *slog.Logger) (*console, error) {
	if p.ConsoleLog == "" {
		return nil, nil
	}
	if err := caplog.Remove(p.ConsoleLog); err != nil {
		return nil, fmt.Errorf("remove the last boot's console log: %w", err)
	}
	l, err := caplog.Open(p.ConsoleLog, p.ConsoleMax, []byte(consoleMarker), 0)
	if err != nil {
		return nil, fmt.Errorf("console log: %w", err)
	}
	in, err := os.Open(os.DevNull)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("console input: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		in.Close()
		l.Close()
		return nil, fmt.Errorf("console pipe: %w", err)
	}
	c := &console{r: r, w: w, in: in, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if err := caplog.Drain(r, l); err != nil {
			log.Warn("the console log stopped; the guest's console is read and dropped", "err", err)
		}
	}()
	return c, nil
}

// stop closes the framework's ends, waits for the console's last bytes
// (at most consoleDrainWait) and closes the pipe. A nil console is none.
func (c *console) stop() {
	if c == nil {
		return
	}
	c.w.Close()
	c.in.Close()
	c.r.SetReadDeadline(time.Now().Add(consoleDrainWait))
	<-c.done
	c.r.Close()
}
