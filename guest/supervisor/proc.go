package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// basePath is the PATH every agent and exec starts from.
const basePath = "/opt/agent/bin:/usr/local/bin:/usr/bin:/bin"

// child is a started process in its own process group, with pipes the
// supervisor holds the other ends of.
type child struct {
	cmd    *exec.Cmd
	pgid   int
	stdin  *os.File // write end; nil when the child reads /dev/null
	stdout *os.File // read ends
	stderr *os.File
	exited chan struct{} // closed once the process is reaped
}

type spawnSpec struct {
	argv  []string
	env   map[string]string
	dir   string
	user  User
	stdin bool
	// root, when set, is the root the child runs chrooted in
	// (Config.ToolRoot); its program is looked up there.
	root string
	// tty, when set, is the slave of a pseudo-terminal: the child's
	// stdin, stdout and stderr, and its controlling terminal in a new
	// session. The child then has no pipes.
	tty *os.File
}

// spawn starts spec.argv. The program is looked up in the child's PATH,
// not the supervisor's.
func spawn(spec spawnSpec) (*child, error) {
	path, err := lookPathIn(spec.root, spec.argv[0], spec.env["PATH"])
	if err != nil {
		return nil, err
	}
	var files []*os.File // everything to close if start fails
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	c := &child{exited: make(chan struct{})}
	if spec.tty != nil {
		attr := sysProcAttr(spec.user)
		attr.Chroot = spec.root
		// A session leader cannot change its process group: Setsid alone
		// makes the child the leader of a new session and group.
		attr.Setpgid = false
		attr.Setsid, attr.Setctty, attr.Ctty = true, true, 0
		c.cmd = &exec.Cmd{
			Path: path, Args: spec.argv, Env: envList(spec.env), Dir: spec.dir,
			Stdin: spec.tty, Stdout: spec.tty, Stderr: spec.tty,
			SysProcAttr: attr,
		}
		if err := c.cmd.Start(); err != nil {
			return nil, err
		}
		c.pgid = c.cmd.Process.Pid
		return c, nil
	}
	var stdinR, stdoutW, stderrW *os.File
	if spec.stdin {
		if stdinR, c.stdin, err = pipe(); err != nil {
			closeAll()
			return nil, fmt.Errorf("make a stdin pipe: %w", err)
		}
	}
	if c.stdout, stdoutW, err = pipe(); err != nil {
		closeAll()
		return nil, fmt.Errorf("make a stdout pipe: %w", err)
	}
	if c.stderr, stderrW, err = pipe(); err != nil {
		closeAll()
		return nil, fmt.Errorf("make a stderr pipe: %w", err)
	}
	c.cmd = &exec.Cmd{
		Path:        path,
		Args:        spec.argv,
		Env:         envList(spec.env),
		Dir:         spec.dir,
		Stdout:      stdoutW,
		Stderr:      stderrW,
		SysProcAttr: sysProcAttr(spec.user),
	}
	c.cmd.SysProcAttr.Chroot = spec.root
	if stdinR != nil {
		c.cmd.Stdin = stdinR
	}
	if err := c.cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	c.pgid = c.cmd.Process.Pid
	for _, f := range []*os.File{stdinR, stdoutW, stderrW} {
		if f != nil {
			f.Close()
		}
	}
	return c, nil
}

// signal sends sig to the child's whole process group, unless the child is
// already reaped (its group id may then be reused).
func (c *child) signal(sig syscall.Signal) {
	select {
	case <-c.exited:
		return
	default:
	}
	killGroup(c.pgid, sig)
}

func killGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig) // ESRCH: the group is already gone
	}
}

// exitStatus returns the exit code, and for a signal 128+N and its name.
func exitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), unix.SignalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}

// baseEnv is the minimal environment every child starts from.
func baseEnv(u User) map[string]string {
	return map[string]string{
		"PATH":    basePath,
		"HOME":    u.Home,
		"USER":    u.Name,
		"LOGNAME": u.Name,
		"LANG":    "C.UTF-8",
		"TERM":    "dumb",
	}
}

// mergeEnv returns the layers merged, later ones winning.
func mergeEnv(layers ...map[string]string) map[string]string {
	m := make(map[string]string)
	for _, l := range layers {
		for k, v := range l {
			m[k] = v
		}
	}
	return m
}

func envList(m map[string]string) []string {
	l := make([]string, 0, len(m))
	for k, v := range m {
		l = append(l, k+"="+v)
	}
	return l
}

// lookPath finds file in the directories of pathList.
func lookPath(file, pathList string) (string, error) {
	return lookPathIn("", file, pathList)
}

// lookPathIn finds file in the directories of pathList as a process
// chrooted in root ("": not) sees them, and returns its path there.
func lookPathIn(root, file, pathList string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
	}
	return "", fmt.Errorf("%q is not in PATH (%s): install it in the image or pass an absolute path", file, pathList)
}
