//go:build linux

package tests

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/cli"
	"sandbar/app/config"
	"sandbar/app/store"
)

// floodScript is a hostile agent that writes as fast as it can for $DUR
// seconds, three ways at once: 60 KB lines to stdout, one endless line
// with no newline to stderr, and many short lines to stdout. Then it says
// so and waits.
const floodScript = `
L=$(head -c 60000 /dev/zero | tr '\0' L)
yes "$L" & P1=$!
tr '\0' N < /dev/zero >&2 & P2=$!
yes short & P3=$!
sleep "$DUR"
kill $P1 $P2 $P3
wait
echo "hostile: flooded"
exec sleep 3600
`

// consoleFlood, run as root in the guest, writes the console as fast as
// it can for $1 seconds, in the background.
const consoleFlood = `C=$(head -c 1000 /dev/zero | tr '\0' C)
setsid timeout "$1" yes "$C" >/dev/console 2>/dev/null </dev/null &
echo started`

// floodMargin is what a session's disk use may pass the sum of its caps
// by: SQLite's WAL (checkpointed every 4 MB) and a write or two past a
// file's cap.
const floodMargin = 16 << 20

// engineRSSBound is the most the engine's peak RSS may reach while one
// session floods.
const engineRSSBound = 400 << 20

// TestFloodStaysInCaps (issue 21, finding 6): a hostile agent floods its
// stdout and stderr (long lines, no newlines, many short lines) while
// root in the guest floods the console, for SANDBAR_FLOOD_SECONDS (20 by
// default; the figure is 60). Throughout, the session's files on
// the host (its folder, less the guest's own scratch disk) and the
// database's growth stay under the sum of the byte caps plus
// floodMargin; the engine's peak RSS stays under engineRSSBound; and
// `sandbar logs` then begins with "earlier output trimmed".
func TestFloodStaysInCaps(t *testing.T) {
	if testing.Short() {
		t.Skip("a real VM flooding for 20 s or more")
	}
	dur := 20
	if v := os.Getenv("SANDBAR_FLOOD_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SANDBAR_FLOOD_SECONDS=%q: give a whole number of seconds", v)
		}
		dur = n
	}
	h := newHostileWorld(t)
	h.commitScript("DUR=" + strconv.Itoa(dur) + "\n" + floodScript)
	db := filepath.Join(h.home, "sandbar.db")
	dbBefore := dbSize(db)
	caps := int64(config.ConsoleLogMax + config.AgentLogMax + config.StoredLogMax + config.TranscriptMax)
	bound := caps + floodMargin

	id := h.startID("--repo", h.repo, "--agent", "sh hostile.sh", "--cpus", "1", "--memory", "768", "--disk", "1", "--no-network")
	dir := filepath.Join(h.home, "sessions", id)
	h.waitState(id, "running")
	h.quiet = true
	// Root in the guest floods the console; whether the agent user can
	// too is only logged.
	if r := h.stepWithin(time.Minute, "console flood as root", "exec", "--user", "root", id, "--", "sh", "-c", consoleFlood, "flood", strconv.Itoa(dur)); r.code != 0 || !strings.Contains(r.out, "started") {
		t.Fatalf("the console flood did not start: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	agentConsole := h.stepWithin(time.Minute, "console write as the agent user", "exec", id, "--", "sh", "-c", "echo agent >/dev/console && echo wrote")
	t.Logf("the agent user writing /dev/console: exit %d %s%s", agentConsole.code, strings.TrimSpace(agentConsole.out), strings.TrimSpace(agentConsole.errOut))

	var peak, peakFiles, peakDB int64
	sample := func() {
		files, dbg := sessionFiles(dir), dbSize(db)-dbBefore
		if files+dbg > peak {
			peak, peakFiles, peakDB = files+dbg, files, dbg
		}
	}
	flooded := waitUntil(time.Duration(dur)*time.Second+4*time.Minute, 2*time.Second, func() bool {
		sample()
		r := h.stepWithin(time.Minute, "the log's tail", "logs", "-n", "5", id)
		if strings.Contains(r.out, "hostile: flooded") {
			return true
		}
		if s := h.session(id); s.State != "running" {
			t.Fatalf("session %s is %s (%s) before its agent said it had flooded", id, s.State, s.Reason)
		}
		return false
	})
	if !flooded {
		h.diagnose(id)
		t.Fatalf("the agent did not say it had flooded within %v of %d s", 4*time.Minute, dur)
	}
	sample()
	h.mustStep("stop", "stop", id)
	sample()
	h.quiet = false

	console := fileSize(filepath.Join(dir, "console.log")) + fileSize(filepath.Join(dir, "console.log.1"))
	agentLog := fileSize(filepath.Join(dir, "agent.log")) + fileSize(filepath.Join(dir, "agent.log.1"))
	t.Logf("after %d s of flood: peak %d MiB on the host (session files %d MiB, database growth %d MiB), bound %d MiB; console %d KiB, agent.log %d KiB",
		dur, peak>>20, peakFiles>>20, peakDB>>20, bound>>20, console>>10, agentLog>>10)
	if peak > bound {
		t.Errorf("the session took %d MiB of the host's disk (files %d MiB, database %d MiB), past its caps (%d MiB) and margin (%d MiB)",
			peak>>20, peakFiles>>20, peakDB>>20, caps>>20, floodMargin>>20)
	}
	if console == 0 {
		t.Error("console.log is empty: the guest's console was not written")
	}
	if console > config.ConsoleLogMax+64<<10 {
		t.Errorf("console.log and console.log.1 hold %d bytes, past the cap %d", console, config.ConsoleLogMax)
	}
	if agentLog > config.AgentLogMax+64<<10 {
		t.Errorf("agent.log and agent.log.1 hold %d bytes, past the cap %d", agentLog, config.AgentLogMax)
	}

	pid := h.enginePID()
	if hwm, ok := vmHWM(pid); !ok {
		t.Errorf("cannot read the engine's (pid %d) peak RSS from /proc", pid)
	} else {
		t.Logf("the engine's peak RSS: %d MiB", hwm>>20)
		if hwm > engineRSSBound {
			t.Errorf("the engine peaked at %d MiB of memory under the flood, past %d MiB", hwm>>20, engineRSSBound>>20)
		}
	}

	// `sandbar logs` begins with the trimmed line exactly when the store
	// dropped the oldest lines (a slow host may not flood past its cap).
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.FirstLogSeq(context.Background(), id)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	logs := h.stepWithin(2*time.Minute, "logs after the flood", "logs", id)
	top, _, _ := strings.Cut(logs.errOut, "\n")
	t.Logf("the stored log begins at line %d; `sandbar logs` printed %d MiB", first, (len(logs.out)+len(logs.errOut))>>20)
	if (first > 1) != (top == cli.LogTrimmedLine) {
		t.Errorf("the store keeps lines from %d, and `sandbar logs` begins %q on stderr: want %q exactly when lines were dropped", first, clip(top), cli.LogTrimmedLine)
	}
}

// sessionFiles is the bytes the files of a session's folder take on
// disk, less the guest's scratch disk (its own disk, bounded by --disk).
func sessionFiles(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || p == filepath.Join(dir, "scratch.img") {
			return nil
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// dbSize is the database with its WAL and shared-memory file, in bytes.
func dbSize(db string) int64 {
	return fileSize(db) + fileSize(db+"-wal") + fileSize(db+"-shm")
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}
