//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsoleKeepsLinesUntilAttached: a process started with stdout on
// /dev/null, as init is when the kernel found no console, keeps its lines
// until the console is attached; then they reach it, in order, followed
// by later lines and by what the Go runtime writes to fd 2 (a panic). The
// child is this test binary, so this process's fds stay as they are.
func TestConsoleKeepsLinesUntilAttached(t *testing.T) {
	if path := os.Getenv("SANDBAR_TEST_CONSOLE"); path != "" {
		consoleChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "console")
	cmd := exec.Command(os.Args[0], "-test.run=^TestConsoleKeepsLinesUntilAttached$")
	cmd.Env = append(os.Environ(), "SANDBAR_TEST_CONSOLE="+path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &out // stdout: /dev/null
	cmd.Run()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the child wrote no console: %v\n%s", err, out.String())
	}
	text := string(got)
	for _, want := range []string{"] started\n", "second\n", "third\n", "panic: to the console"} {
		i := strings.Index(text, want)
		if i < 0 {
			t.Fatalf("the console lacks %q:\n%s", want, text)
		}
		text = text[i+len(want):]
	}

	bounded := &console{}
	line := strings.Repeat("x", 1023) + "\n"
	for range 2 * maxEarlyConsole / len(line) {
		bounded.write(line)
	}
	if len(bounded.early) > maxEarlyConsole || bounded.dropped != maxEarlyConsole {
		t.Errorf("kept %d bytes and left out %d, want at most %d kept and %d left out", len(bounded.early), bounded.dropped, maxEarlyConsole, maxEarlyConsole)
	}
}

func consoleChild(path string) {
	c := newConsole(false)
	if !c.waiting() {
		fmt.Fprintln(os.Stderr, "stdout is /dev/null but the console does not wait")
		os.Exit(1)
	}
	c.mark("started")
	c.write("second\n")
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := c.attach(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	f.Close()
	c.write("third\n")
	panic("to the console")
}

// TestOpenConsoleWaitsForTheDevice: the console's node appears a moment
// after its driver loads; openConsole waits for it, within its bound.
func TestOpenConsoleWaitsForTheDevice(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "hvc0")
	go func() {
		// Not a wait: the node appearing late is what openConsole
		// must wait for.
		time.Sleep(30 * time.Millisecond)
		os.WriteFile(dev, nil, 0o644)
	}()
	f, err := openConsole(dev, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	start := time.Now()
	_, err = openConsole(filepath.Join(dir, "hvc7"), 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not open within 50ms") {
		t.Fatalf("err = %v, want one saying hvc7 did not open in time", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("giving up took %s", took)
	}
}
