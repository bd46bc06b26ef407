package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sandbar/app/workspace"
)

// Bounds of the diff view.
const (
	diffMaxFile  = 2 << 20 // bytes of one side
	diffMaxEdits = 1000    // edits before the middle is shown replaced whole
	diffContext  = 3       // lines around a change
	diffMaxLines = 5000    // lines shown
)

// fileDiff is the unified diff of one changed file of a session's clone
// ws against the commit base: what `git diff base -- path` shows.
//
// The clone is the agent's: its .git/config and .gitattributes are not
// trusted, and git would run the filters they name when it reads the
// working tree. So only the base side comes from git (cat-file, which
// runs nothing), the working-tree side is read from disk inside ws, and
// the diff is computed here.
func fileDiff(ctx context.Context, ws, base string, f workspace.FileChange) (string, error) {
	oldPath, newPath := f.Path, f.Path
	if f.From != "" {
		oldPath = f.From
	}
	var old []byte
	if f.Status != "untracked" && f.Status != "added" {
		b, err := baseBlob(ctx, ws, base, oldPath)
		if err != nil {
			return "", err
		}
		old = b
	}
	var cur []byte
	if f.Status != "deleted" {
		b, err := readInside(ws, newPath)
		if err != nil {
			return "", err
		}
		cur = b
	}
	head := fmt.Sprintf("--- a/%s\n+++ b/%s\n", oldPath, newPath)
	if old == nil {
		head = fmt.Sprintf("--- /dev/null\n+++ b/%s\n", newPath)
	}
	if cur == nil && f.Status == "deleted" {
		head = fmt.Sprintf("--- a/%s\n+++ /dev/null\n", oldPath)
	}
	if len(old) > diffMaxFile || len(cur) > diffMaxFile {
		return head + fmt.Sprintf("File too large to show here (%s → %s): open the workspace in your editor.\n", byteSize(uint64(len(old))), byteSize(uint64(len(cur)))), nil
	}
	if isBinary(old) || isBinary(cur) {
		return head + fmt.Sprintf("Binary file differs (%s → %s).\n", byteSize(uint64(len(old))), byteSize(uint64(len(cur)))), nil
	}
	body := unifiedDiff(splitLines(old), splitLines(cur))
	if body == "" {
		return head + "No difference in content (only the mode or the name changed).\n", nil
	}
	return head + body, nil
}

// baseBlob is the file at path in commit base of the clone ws.
func baseBlob(ctx context.Context, ws, base, path string) ([]byte, error) {
	if base == "" {
		base = "HEAD"
	}
	args := []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"}
	if os.Geteuid() == 0 {
		args = append(args, "-c", "safe.directory=*") // the clone belongs to the agent's uid
	}
	args = append(args, "-C", ws, "cat-file", "blob", base+":"+path)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = gitEnvForDiff()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("read %s at %s: %s", path, shortCommit(base), strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// gitEnvForDiff is this process's environment without what would point
// git at another repository or inject configuration.
func gitEnvForDiff() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "GIT_DIR", k == "GIT_WORK_TREE", k == "GIT_COMMON_DIR", k == "GIT_INDEX_FILE",
			k == "GIT_OBJECT_DIRECTORY", k == "GIT_ALTERNATE_OBJECT_DIRECTORIES", k == "GIT_NAMESPACE",
			k == "GIT_CONFIG", k == "GIT_CONFIG_PARAMETERS", k == "GIT_CONFIG_COUNT",
			strings.HasPrefix(k, "GIT_CONFIG_KEY_"), strings.HasPrefix(k, "GIT_CONFIG_VALUE_"):
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// readInside reads the file at the slash-separated path inside dir,
// never following a link out of it; a symbolic link reads as its target,
// as git stores it.
func readInside(dir, path string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open the workspace: %w", err)
	}
	defer root.Close()
	name := filepath.FromSlash(path)
	fi, err := root.Lstat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is gone from the workspace (refresh the list)", path)
		}
		return nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(name)
		if err != nil {
			return nil, err
		}
		return []byte(target), nil
	case !fi.Mode().IsRegular():
		return []byte(fmt.Sprintf("(%s is not a regular file)\n", path)), nil
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, diffMaxFile+1))
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// splitLines splits text into lines, each without its newline; a last
// line without one is marked the way diff marks it.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	noEOL := !strings.HasSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	if noEOL {
		lines[len(lines)-1] += "\n\\ No newline at end of file"
	}
	return lines
}

// diffOp is one line of an edit script: ' ' kept, '-' removed, '+' added.
type diffOp struct {
	kind byte
	line string
}

// lineDiff is a shortest edit script from a to b (Myers). When more than
// maxEdits edits are needed, the part between the common head and tail
// is given as removed whole and added whole.
func lineDiff(a, b []string, maxEdits int) []diffOp {
	var ops []diffOp
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{' ', a[pre]})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	mid, ok := myers(a[pre:len(a)-suf], b[pre:len(b)-suf], maxEdits)
	if !ok {
		mid = mid[:0]
		for _, l := range a[pre : len(a)-suf] {
			mid = append(mid, diffOp{'-', l})
		}
		for _, l := range b[pre : len(b)-suf] {
			mid = append(mid, diffOp{'+', l})
		}
	}
	ops = append(ops, mid...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

func myers(a, b []string, maxEdits int) ([]diffOp, bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		var ops []diffOp
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops, true
	}
	maxD := min(n+m, maxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d] is v[-d-1 .. d+1] as round d starts
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return myersPath(a, b, trace), true
			}
		}
	}
	return nil, false
}

// myersPath walks the trace back from the end to the start.
func myersPath(a, b []string, trace [][]int) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for d := len(trace) - 1; d > 0; d-- {
		vd := trace[d]
		at := func(k int) int { return vd[k+d+1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, diffOp{' ', a[x-1]})
			x--
			y--
		}
		if x == prevX {
			rev = append(rev, diffOp{'+', b[y-1]})
			y--
		} else {
			rev = append(rev, diffOp{'-', a[x-1]})
			x--
		}
	}
	for x > 0 && y > 0 {
		rev = append(rev, diffOp{' ', a[x-1]})
		x--
		y--
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// unifiedDiff writes the hunks of a → b with diffContext lines around
// each change; "" when they are the same.
func unifiedDiff(a, b []string) string {
	ops := lineDiff(a, b, diffMaxEdits)
	var out strings.Builder
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-diffContext, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		aStart, bStart := 1, 1
		for _, op := range ops[:start] {
			if op.kind != '+' {
				aStart++
			}
			if op.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		if aLen == 0 {
			aStart--
		}
		if bLen == 0 {
			bStart--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart, aLen, bStart, bLen)
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}
