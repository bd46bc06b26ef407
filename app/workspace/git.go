package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrNoGit means the git command could not be found.
var ErrNoGit = errors.New("git is not installed")

// scrubbed reports whether an inherited variable must not reach git: the
// ones that point git at another repository, index or object store, inject
// configuration, or change what it prints. Inherited from a hook or from a
// shell inside some other repository, they would make every command here
// act on the wrong thing. (This is `git rev-parse --local-env-vars` plus
// the discovery, config, output and locale ones it leaves out.)
func scrubbed(k string) bool {
	switch k {
	case "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_INDEX_VERSION",
		"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_IMPLICIT_WORK_TREE",
		"GIT_GRAFT_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
		"GIT_SHALLOW_FILE", "GIT_NAMESPACE", "GIT_INTERNAL_SUPER_PREFIX", "GIT_QUARANTINE_PATH",
		"GIT_DISCOVERY_ACROSS_FILESYSTEM",
		"GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
		"GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
		"GIT_FLUSH", "GIT_PROGRESS_DELAY",
		"LC_ALL", "LANG", "LANGUAGE":
		return true
	}
	return strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") ||
		strings.HasPrefix(k, "GIT_TRACE")
}

// gitEnv is the environment every git command here runs in: the caller's,
// minus anything that redirects git, plus a fixed locale for parsing, no
// credential prompts (nothing here can answer one) and no opportunistic
// index writes, so that reading a repository never changes it.
func gitEnv() []string {
	env := os.Environ()
	out := make([]string, 0, len(env)+4)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if scrubbed(k) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// GitDeadline bounds a host git command whose context has no deadline of
// its own: nothing Sandbar runs may hang for good.
const GitDeadline = 30 * time.Minute

func withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, GitDeadline)
}

// command builds a git command run in dir ("" for no -C) that dies with
// its context and, on Linux, with this process.
func command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	// Host git runs only in the person's repository and in Sandbar's own
	// (see Mirror), never where an agent writes: a session's clone lives
	// in its VM. Hooks and the fsmonitor are off all the same, since
	// Sandbar's reads need neither, and diffs run with --no-ext-diff
	// --no-textconv.
	full := []string{"-c", "core.quotepath=off", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"}
	if dir != "" {
		full = append(full, "-C", dir)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = gitEnv()
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// gitError is a failed git command: what was run, how it ended and the
// tail of what git said, for the log and for wrapping into a message that
// says what to do.
type gitError struct {
	args   []string
	code   int
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode reports git's exit status, or -1 if err is not a git exit.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// gitMessage is git's own words for a failure, without the command line.
func gitMessage(err error) string {
	var ge *gitError
	if errors.As(err, &ge) {
		lines := strings.Split(strings.TrimSpace(ge.stderr), "\n")
		for i := range lines {
			lines[i] = strings.TrimPrefix(strings.TrimSpace(lines[i]), "fatal: ")
		}
		return strings.Join(lines, "; ")
	}
	return err.Error()
}

func wrapRun(args []string, stderr string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("%w: install git (on a Mac: xcode-select --install) and try again", ErrNoGit)
	}
	ge := &gitError{args: args, code: -1, stderr: lastLines(stderr, 8), err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.code = ee.ExitCode()
	}
	return ge
}

// git runs one git command in dir and returns its standard output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitInput(ctx, dir, nil, args...)
}

// gitInput is git with stdin.
func gitInput(ctx context.Context, dir string, stdin io.Reader, args ...string) (string, error) {
	return gitEnvInput(ctx, dir, nil, stdin, args...)
}

// gitEnvInput is git with stdin and env added to its environment; what it
// prints past MaxGitOutput kills it (see gitMax).
func gitEnvInput(ctx context.Context, dir string, env []string, stdin io.Reader, args ...string) (string, error) {
	return gitMax(ctx, dir, env, stdin, MaxGitOutput, args...)
}

// MaxGitOutput bounds what one host git command may print into memory:
// a tree of a few KiB that reuses its subtrees lists as gigabytes.
const MaxGitOutput = 64 << 20

// ErrOutputTooLarge: a git command printed more than Sandbar reads.
var ErrOutputTooLarge = errors.New("git printed more than Sandbar reads")

// outputError is a git command killed for printing more than max bytes.
type outputError struct {
	args []string
	max  int64
}

func (e *outputError) Error() string {
	return fmt.Sprintf("git %s printed more than %s", strings.Join(e.args, " "), sizeStr(e.max))
}

func (e *outputError) Is(target error) bool { return target == ErrOutputTooLarge }

// gitMax runs git and returns at most max bytes of its output: past them
// git is killed and the error wraps ErrOutputTooLarge, with what came
// before it returned all the same.
func gitMax(ctx context.Context, dir string, env []string, stdin io.Reader, max int64, args ...string) (string, error) {
	out := &cappedBuffer{max: max, args: args}
	err := gitTo(ctx, dir, env, stdin, out, args...)
	return out.b.String(), err
}

// gitTo runs git with its output going to w; an error from w.Write kills
// git, and is what gitTo returns.
func gitTo(ctx context.Context, dir string, env []string, stdin io.Reader, w io.Writer, args ...string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := command(ctx, dir, args...)
	cmd.Env = append(cmd.Env, env...)
	kw := &killWriter{w: w, kill: kill}
	errb := &tailBuffer{max: 64 << 10}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, kw, errb
	err := cmd.Run()
	if kw.err != nil {
		return kw.err
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("git %s: %w", strings.Join(args, " "), ctx.Err())
	}
	return wrapRun(args, errb.String(), err)
}

// killWriter passes writes to w, and kills the command on w's first error.
type killWriter struct {
	w    io.Writer
	kill func()
	err  error
}

func (k *killWriter) Write(p []byte) (int, error) {
	if k.err != nil {
		return 0, k.err
	}
	n, err := k.w.Write(p)
	if err != nil {
		k.err = err
		k.kill()
	}
	return n, err
}

// cappedBuffer keeps up to max bytes and fails the write that passes them.
type cappedBuffer struct {
	b    bytes.Buffer
	max  int64
	args []string
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.max - int64(c.b.Len())
	if int64(len(p)) > room {
		room = max(room, 0)
		c.b.Write(p[:room])
		return int(room), &outputError{args: c.args, max: c.max}
	}
	return c.b.Write(p)
}

// tailBuffer keeps the last max to 2 × max bytes written to it: git's
// error comes last.
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// gitLine is git with its output's trailing newline removed.
func gitLine(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := git(ctx, dir, args...)
	return strings.TrimRight(out, "\n"), err
}

// splitZ splits NUL-terminated output, dropping the empty tail.
func splitZ(s string) []string {
	s = strings.TrimSuffix(s, "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// progressLine matches git's progress meter, "Receiving objects:  45% (450/1000)",
// as written by clone, fetch and checkout (and "remote: " relayed ones).
var progressLine = regexp.MustCompile(`^(?:remote: )?([A-Za-z][A-Za-z ]*?):\s+(\d{1,3})%`)

// scanProgress reads git's --progress stderr, where the meter redraws with
// carriage returns, calls fn for every new phase or percentage, and returns
// the other lines (git's messages) for error reports.
func scanProgress(r io.Reader, fn func(Progress)) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	sc.Split(splitCRLF)
	var msgs []string
	last := Progress{Percent: -1}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		m := progressLine.FindStringSubmatch(line)
		if m == nil {
			msgs = append(msgs, line)
			if len(msgs) > 40 {
				msgs = msgs[1:]
			}
			continue
		}
		pct, _ := strconv.Atoi(m[2])
		p := Progress{Phase: m[1], Percent: min(pct, 100)}
		if p != last && fn != nil {
			fn(p)
		}
		last = p
	}
	return strings.Join(msgs, "\n")
}

func splitCRLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// gitProgress runs a git command whose stderr carries a progress meter.
func gitProgress(ctx context.Context, dir string, fn func(Progress), args ...string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	cmd := command(ctx, dir, args...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	done := make(chan string, 1)
	go func() {
		done <- scanProgress(pr, fn)
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	msgs := <-done
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("git %s: %w", strings.Join(args, " "), ctx.Err())
	}
	return wrapRun(args, msgs, err)
}
