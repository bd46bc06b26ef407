package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"sandbar/app/session"
)

// shellCmd is `sandbar shell ID [-- CMD...]`: a terminal into the
// session's VM, like `docker exec -it`. With a terminal on stdin it puts
// that terminal in raw mode and runs the command on a PTY of the same
// size (Ctrl-C, window changes and full-screen programs work); without
// one it runs the command on pipes, so `echo 'echo hi' | sandbar shell ID`
// prints hi. It exits with the command's exit code.
func shellCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar shell")
	user := fs.String("user", session.UserAgent, "agent or root")
	cwd := fs.String("cwd", "", "working directory in the guest (default /workspace)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return UsageError{Msg: "sandbar shell: give a session id: sandbar shell ID [-- CMD [ARGS...]]"}
	}
	argv := fs.Args()[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	req := session.ExecRequest{Argv: argv, User: *user, Cwd: *cwd}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	in, _ := env.Stdin.(*os.File)
	tty := in != nil && term.IsTerminal(int(in.Fd()))
	if !tty {
		return runShell(ctx, env, e, fs.Arg(0), req, env.Stdout, env.Stderr, nil)
	}
	fd := int(in.Fd())
	req.PTY, req.Term = true, env.Term
	if cols, rows, err := term.GetSize(fd); err == nil && rows > 0 && cols > 0 {
		req.Rows, req.Cols = min(rows, session.MaxWinSize), min(cols, session.MaxWinSize)
	}
	old, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	defer term.Restore(fd, old)
	// A terminal's output wants \r\n; raw mode turns off that translation,
	// and the guest's PTY does it instead.
	return runShell(ctx, env, e, fs.Arg(0), req, env.Stdout, env.Stdout, func(t session.Terminal) func() {
		return forwardResizes(fd, t)
	})
}

// forwardResizes sends the terminal's size on every SIGWINCH until the
// returned stop is called.
func forwardResizes(fd int, t session.Terminal) (stop func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, unix.SIGWINCH)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-quit:
				return
			case <-winch:
				if cols, rows, err := term.GetSize(fd); err == nil && rows > 0 && cols > 0 {
					t.Resize(min(rows, session.MaxWinSize), min(cols, session.MaxWinSize))
				}
			}
		}
	})
	return func() {
		signal.Stop(winch)
		close(quit)
		wg.Wait()
	}
}

func runShell(ctx context.Context, env *Env, e session.Service, id string, req session.ExecRequest,
	stdout, stderr io.Writer, watch func(session.Terminal) func()) error {
	t, err := e.Shell(ctx, id, req, stdout, stderr)
	if err != nil {
		return err
	}
	if watch != nil {
		defer watch(t)()
	}
	stopInput := pumpStdin(env.Stdin, t)
	res, err := t.Wait(ctx)
	stopInput()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return ExitError{Code: 130}
		}
		return err
	}
	if res.Code != 0 {
		return ExitError{Code: res.Code}
	}
	return nil
}

// pumpStdin copies r to t's stdin, then ends it, until the returned stop
// is called. A terminal or pipe is read through a non-blocking duplicate,
// so that stop can interrupt a read that waits for input that will never
// come; its blocking mode is restored.
func pumpStdin(r io.Reader, t session.Terminal) (stop func()) {
	var wg sync.WaitGroup
	src, interrupt, restore := interruptible(r)
	wg.Go(func() {
		if _, err := io.Copy(t, src); err == nil {
			t.CloseWrite()
		}
	})
	return func() {
		interrupt()
		wg.Wait()
		restore()
	}
}

func interruptible(r io.Reader) (src io.Reader, interrupt, restore func()) {
	none := func() {}
	f, ok := r.(*os.File)
	if !ok {
		return r, none, none // an in-memory reader ends by itself
	}
	if fi, err := f.Stat(); err != nil || fi.Mode().IsRegular() {
		return r, none, none // a file ends by itself
	}
	fd := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return r, none, none
	}
	dup, err := unix.Dup(fd)
	if err != nil {
		return r, none, none
	}
	unix.CloseOnExec(dup)
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return r, none, none
	}
	nf := os.NewFile(uintptr(dup), f.Name()) // pollable: it is non-blocking
	return nf, func() { nf.SetReadDeadline(time.Now()) }, func() {
		// The flag belongs to the open file, which the dup shares.
		unix.SetNonblock(fd, flags&unix.O_NONBLOCK != 0)
		nf.Close()
	}
}
