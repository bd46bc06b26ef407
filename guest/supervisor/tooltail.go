package supervisor

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"sandbar/guest/protocol"
)

// A running tool's output, live. Claude Code's Bash tool runs its
// command with stdout and stderr on a file of its own
// (/tmp/claude-<uid>/…/tasks/<id>.output), which it reads back when the
// command ends; an agent's helpers may write to files too. The
// supervisor sees the agent's process tree: every regular file that one
// of the agent's descendants has as its stdout or stderr, and every
// tasks/*.output file the agent holds open itself, is followed from
// where it stood when first seen (less its last MaxToolChunk bytes), read
// by path through /proc, never through a pipe (reading a pipe would take
// the bytes from whoever reads it). What the agent writes to its own
// stdout already comes as agent:stdout.
//
// The files are the agent's: anything may be in them, at any rate. At
// most protocol.ToolOutputRate bytes a second go to the host, in events
// of at most protocol.MaxToolChunk; a file that runs further ahead is
// skipped to its newest bytes, and the event says how many were skipped.
// A file that turns out to hold binary data (`head -c 300M /dev/urandom
// > big.bin` has the tool's stdout on the agent's own data file) is not
// read any further: its events say Binary and count its bytes skipped.

// toolPoll is how often the process tree and the followed files are
// read: the most a byte waits in the guest before it is sent.
const toolPoll = 100 * time.Millisecond

// toolBeat is how often a followed file's event comes with no new bytes,
// for the tool's elapsed time.
const toolBeat = time.Second

// maxToolFiles bounds the files followed at once.
const maxToolFiles = 16

// clockTicks is USER_HZ, the unit of /proc/PID/stat's start time: 100
// on every Linux the guest runs.
const clockTicks = 100

type fileKey struct{ dev, ino uint64 }

// toolFile is one followed file.
type toolFile struct {
	f     *os.File
	off   int64
	pid   int     // the oldest process holding it
	start float64 // when that process started, seconds after boot
	beat  time.Time
	// binary: the file holds binary data; it is no longer read.
	binary bool
}

// holder is a process of the agent's that holds a file as its output.
type holder struct {
	pid   int
	start float64
	path  string // /proc/PID/fd/N
}

// watchTools follows the output files of a's tools until a exits or the
// session ends.
func (s *session) watchTools(a *agentProc) {
	t := time.NewTicker(toolPoll)
	defer t.Stop()
	files := map[fileKey]*toolFile{}
	defer func() {
		for _, tf := range files {
			tf.f.Close()
		}
	}()
	tokens, last := float64(protocol.ToolOutputRate), time.Now()
	root, agent := s.cfg.ProcRoot, a.cmd.Process.Pid
	for {
		ended := false
		select {
		case <-s.life.Done():
			return
		case <-a.exited:
			ended = true
		case <-t.C:
		}
		now := time.Now()
		tokens = min(float64(protocol.ToolOutputRate), tokens+now.Sub(last).Seconds()*protocol.ToolOutputRate)
		last = now
		var held map[fileKey]holder
		if !ended {
			held = toolHolders(root, agent)
		}
		for k, h := range held {
			if tf := files[k]; tf != nil {
				if h.start < tf.start {
					tf.pid, tf.start = h.pid, h.start
				}
				continue
			}
			if len(files) >= maxToolFiles {
				continue
			}
			if tf := openToolFile(h); tf != nil {
				files[k] = tf
			}
		}
		up := uptime(root)
		for k, tf := range files {
			_, holding := held[k]
			ev := protocol.Event{Ev: protocol.EvToolOutput, PID: tf.pid, Done: !holding}
			if up > tf.start {
				ev.Elapsed = int64((up - tf.start) * 1000)
			}
			data, skipped := tf.read(int(tokens))
			tokens -= float64(len(data))
			ev.Skipped, ev.Binary = skipped, tf.binary
			if len(data) > 0 {
				ev.SetPayload(data)
			}
			if len(data) > 0 || skipped > 0 || ev.Done || now.Sub(tf.beat) >= toolBeat {
				tf.beat = now
				if !s.emit(ev) {
					return
				}
			}
			if ev.Done {
				tf.f.Close()
				delete(files, k)
			}
		}
		if ended {
			return
		}
	}
}

// openToolFile opens h's file by its /proc path, checking that it is
// still a regular file; it starts at most MaxToolChunk bytes before its
// end.
func openToolFile(h holder) *toolFile {
	f, err := os.OpenFile(h.path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil
	}
	return &toolFile{f: f, off: max(0, fi.Size()-protocol.MaxToolChunk), pid: h.pid, start: h.start, beat: time.Now()}
}

// read returns the file's new bytes, at most MaxToolChunk and at most
// budget; a file more than a second's rate ahead is skipped to its last
// MaxToolChunk bytes, and skipped says how many were left out.
func (tf *toolFile) read(budget int) (data []byte, skipped int64) {
	fi, err := tf.f.Stat()
	if err != nil {
		return nil, 0
	}
	size := fi.Size()
	if size < tf.off {
		// Truncated: follow it from its new end.
		tf.off = size
		return nil, 0
	}
	if tf.binary {
		skipped, tf.off = size-tf.off, size
		return nil, skipped
	}
	if ahead := size - tf.off; ahead > protocol.ToolOutputRate {
		skipped = ahead - protocol.MaxToolChunk
		tf.off += skipped
	}
	n := min(size-tf.off, protocol.MaxToolChunk, int64(max(budget, 0)))
	if n <= 0 {
		return nil, skipped
	}
	buf := make([]byte, n)
	got, err := tf.f.ReadAt(buf, tf.off)
	if err != nil && err != io.EOF {
		return nil, skipped
	}
	tf.off += int64(got)
	if looksBinary(buf[:got]) {
		tf.binary = true
		return nil, skipped + int64(got)
	}
	return buf[:got], skipped
}

// looksBinary reports whether b, a chunk of a tool's output, is not
// text: it holds a NUL, or more than one byte in 16 that is neither
// valid UTF-8 nor a cut rune at either end.
func looksBinary(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 && i >= 3 && len(b)-i > 3 {
			bad++
		}
		i += max(n, 1)
	}
	return bad*16 > len(b)
}

// toolHolders finds the files the agent's tools write their output to:
// the regular files that the agent's descendants have as stdout or
// stderr, and the tasks/*.output files the agent holds open.
func toolHolders(root string, agent int) map[fileKey]holder {
	procs, desc := agentTree(root, agent)
	held := map[fileKey]holder{}
	add := func(pid int, fd string, want func(target string) bool) {
		path := filepath.Join(root, strconv.Itoa(pid), "fd", fd)
		target, err := os.Readlink(path)
		if err != nil || !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "/proc/") ||
			strings.HasPrefix(target, "/sys/") || strings.HasPrefix(target, "/dev/") || !want(target) {
			return
		}
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return
		}
		k := fileKey{uint64(st.Dev), uint64(st.Ino)}
		if h, ok := held[k]; ok && h.start <= procs[pid].start {
			return
		}
		held[k] = holder{pid: pid, start: procs[pid].start, path: path}
	}
	any := func(string) bool { return true }
	for _, pid := range desc {
		add(pid, "1", any)
		add(pid, "2", any)
	}
	if _, ok := procs[agent]; ok {
		if ents, err := os.ReadDir(filepath.Join(root, strconv.Itoa(agent), "fd")); err == nil {
			for i, e := range ents {
				if i >= 1024 {
					break
				}
				add(agent, e.Name(), taskOutput)
			}
		}
	}
	return held
}

// taskOutput reports whether path is one of Claude Code's task output
// files: …/tasks/<id>.output.
func taskOutput(path string) bool {
	return strings.HasSuffix(path, ".output") && filepath.Base(filepath.Dir(path)) == "tasks"
}

// maxTreeProcs bounds the processes of the agent's tree read at a poll.
const maxTreeProcs = 4096

// agentTree reads the agent's process and its descendants: each one's
// parent and start time, and the descendants breadth first (at most
// maxTreeProcs of them). It reads only their own /proc entries
// (each thread's task/TID/children): reading every process's stat ten
// times a second, kernel threads and all, kept a waiting session's
// supervisor at 40% of a core under emulation. A kernel without the
// children files (CONFIG_PROC_CHILDREN) has every process read instead.
func agentTree(root string, agent int) (procs map[int]procInfo, desc []int) {
	self, err := readProc(root, agent)
	if err != nil {
		return nil, nil
	}
	procs = map[int]procInfo{agent: self}
	for next := -1; next < len(desc) && len(procs) < maxTreeProcs; next++ {
		pid := agent
		if next >= 0 {
			pid = desc[next]
		}
		children, ok := readChildren(root, pid)
		if !ok && pid == agent {
			procs, kids := allProcs(root)
			return procs, descendants(kids, agent)
		}
		for _, c := range children {
			if _, seen := procs[c]; seen || len(procs) >= maxTreeProcs {
				continue
			}
			info, err := readProc(root, c)
			if err != nil || info.ppid != pid {
				continue // gone, or another process's now
			}
			procs[c] = info
			desc = append(desc, c)
		}
	}
	return procs, desc
}

// descendants lists agent's descendants in kids (each process's
// children) breadth first, at most maxTreeProcs of them (a pid's parent
// is read once: no loop can form).
func descendants(kids map[int][]int, agent int) []int {
	desc := append([]int(nil), kids[agent]...)
	for i := 0; i < len(desc) && len(desc) < maxTreeProcs; i++ {
		desc = append(desc, kids[desc[i]]...)
	}
	return desc[:min(len(desc), maxTreeProcs)]
}

// readChildren lists pid's children from each of its threads' children
// file; ok is false when the kernel has no such files.
func readChildren(root string, pid int) (children []int, ok bool) {
	tasks, err := os.ReadDir(filepath.Join(root, strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, true // gone meanwhile
	}
	for i, t := range tasks {
		if i >= 1024 {
			break
		}
		b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "task", t.Name(), "children"))
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(filepath.Join(root, strconv.Itoa(pid), "task", t.Name())); serr == nil {
				return nil, false // the thread is there, its children file is not
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil && c > 0 {
				children = append(children, c)
			}
		}
	}
	return children, true
}

// allProcs is agentTree read from every process's stat.
func allProcs(root string) (map[int]procInfo, map[int][]int) {
	procs := readProcs(root)
	kids := map[int][]int{}
	for pid, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], pid)
	}
	return procs, kids
}

type procInfo struct {
	ppid  int
	start float64 // seconds after boot
}

// readProcs reads every process's parent and start time from root
// (/proc).
func readProcs(root string) map[int]procInfo {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	procs := make(map[int]procInfo, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, err := readProc(root, pid); err == nil {
			procs[pid] = info
		}
	}
	return procs
}

// readProc reads one process's parent and start time from its stat.
func readProc(root string, pid int) (procInfo, error) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procInfo{}, err
	}
	// The command's name, in parentheses, may hold anything: the fields
	// start after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, errors.New("stat without a command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procInfo{}, errors.New("stat too short")
	}
	ppid, _ := strconv.Atoi(f[1])
	ticks, _ := strconv.ParseUint(f[19], 10, 64)
	return procInfo{ppid: ppid, start: float64(ticks) / clockTicks}, nil
}

// uptime is the seconds since boot (/proc/uptime), 0 if unknown.
func uptime(root string) float64 {
	b, err := os.ReadFile(filepath.Join(root, "uptime"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
