package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"sandbar/app/doctor"
	sbwidget "sandbar/app/ui/widget"
)

// A preparation's log, followed into a LogView: the file the preparing
// machine's output is written to, read as it grows. What it holds came
// from the repository's commands in a VM: hostile text, which the
// LogView draws with terminal escapes removed and long lines cut. The
// view holds envLogLines lines, the read starts at most envLogStart
// bytes from the end, and a line without a newline is cut at
// envLogLineMax: memory stays bounded however much the commands write.
const (
	envLogLines    = 5000
	envLogStart    = 1 << 20
	envLogLineMax  = 64 << 10
	envLogInterval = 300 * time.Millisecond
)

// followLog appends path's lines to out until ctx ends, reading what is
// added as it is written. When the preparation ends its folder is
// renamed into place: the caller follows the file there anew.
func followLog(ctx context.Context, path string, out *sbwidget.LogView) {
	sys := func(text string) { out.Append(sbwidget.LogLine{Stream: "system", Time: time.Now(), Text: text}) }
	// O_NONBLOCK: a FIFO put where the log should be does not hang the
	// reader; it is refused below as not a file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		sys("Cannot read the log: " + err.Error())
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		sys("Cannot read the log: " + path + " is not a file")
		return
	}
	if fi, _ := f.Stat(); fi.Size() > envLogStart {
		skip := fi.Size() - envLogStart
		if _, err := f.Seek(skip, io.SeekStart); err == nil {
			sys(fmt.Sprintf("The log's first %s are not shown: %s has it all.", doctor.HumanBytes(skip), path))
		}
	}
	buf := make([]byte, 32<<10)
	var line []byte
	dropLine := false // the start of the first line was skipped
	if off, _ := f.Seek(0, io.SeekCurrent); off > 0 {
		dropLine = true
	}
	t := time.NewTicker(envLogInterval)
	defer t.Stop()
	for {
		var lines []sbwidget.LogLine
		for {
			n, err := f.Read(buf)
			rest := buf[:n]
			now := time.Now()
			for len(rest) > 0 {
				i := bytes.IndexByte(rest, '\n')
				if i < 0 {
					if !dropLine {
						line = append(line, rest...)
					}
					break
				}
				if !dropLine {
					line = append(line, rest[:i]...)
					lines = append(lines, sbwidget.LogLine{Stream: "stdout", Time: now, Text: string(line)})
				}
				rest = rest[i+1:]
				line, dropLine = line[:0], false
			}
			if len(line) > envLogLineMax {
				lines = append(lines, sbwidget.LogLine{Stream: "stdout", Time: now, Text: string(line[:envLogLineMax]) + " …"})
				line, dropLine = line[:0], true // the rest of this line is not kept
			}
			if err != nil || n == 0 {
				if err != nil && !errors.Is(err, io.EOF) {
					out.Append(lines...)
					sys("Cannot read the log further: " + err.Error())
					return
				}
				break
			}
			if len(lines) >= envLogLines {
				break // show these before reading on
			}
		}
		out.Append(lines...)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
