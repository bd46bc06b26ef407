//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandbar/guest/protocol"
	"sandbar/guest/supervisor"
)

// supervise is the child process PID 1 starts: it opens the host channel
// and serves the protocol until shutdown, the host goes away, or PID 1
// passes on a SIGTERM; PID 1 powers the machine off when it returns.
func supervise() int {
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGTERM, unix.SIGINT)
	defer stop()
	level := slog.LevelInfo
	if os.Getenv("SANDBAR_DEBUG") == "1" {
		level = slog.LevelDebug
	}
	c := newConsole(level == slog.LevelDebug)
	c.debugf("supervisor running")
	netErr, err := awaitGoAhead(c)
	if err != nil {
		c.write(fmt.Sprintf("sandbar-init: supervisor: %v\n", err))
		return 1
	}
	c.stopWaiting()
	c.debugf("supervisor released")
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// PID 1 has checked the command line already; read here, it can
	// only fail as /proc fails.
	cfg := config{channel: supervisor.ChannelAuto}
	if raw, err := readCmdline(); err != nil {
		log.Warn("cannot read the kernel command line", "err", err)
	} else if cfg, err = parseCmdline(string(raw)); err != nil {
		log.Warn("kernel command line", "err", err)
	}
	conn, err := supervisor.OpenChannel(ctx, cfg.channel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbar-init: open the host channel: %v\n", err)
		return 1
	}
	c.mark("host channel open (%s)", cfg.channel)
	defer conn.Close()
	var guest netip.Addr
	if netErr == "" {
		guest = guestAddress(log, cfg.net)
	}
	s := supervisor.New(supervisor.Config{
		Sys:         supervisor.LinuxSystem{},
		Logger:      log,
		CABundle:    supervisor.CABundleFor("/"),
		CAFile:      supervisor.SandbarCAFile,
		JVM:         supervisor.JVMTrust{Keytool: "keytool"},
		SudoersFile: supervisor.SandbarSudoers,
		ToolRoot:    toolRoot(cfg),
		GuestIP:     guest,
		NetError:    netErr,
	})
	if err := s.Serve(ctx, conn); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "sandbar-init: supervisor: %v\n", err)
		return 1
	}
	return 0
}

// guestAddress is the guest's own address on its network, for the
// supervisor's ports and relays: sandbar.net's static address, or with
// dhcp the first IPv4 address PID 1 gave an interface (it has, before
// the go-ahead). It is invalid without a network.
func guestAddress(log *slog.Logger, n netConfig) netip.Addr {
	switch n.mode {
	case "static":
		return n.addr.Addr()
	case "dhcp":
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			log.Warn("cannot list the guest's addresses; ports are not watched", "err", err)
			return netip.Addr{}
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && p.Addr().IsGlobalUnicast() {
				return p.Addr()
			}
		}
		log.Warn("no IPv4 address after DHCP; ports are not watched")
	}
	return netip.Addr{}
}

// goAheadMsg is what PID 1 sends with the root once the machine is ready.
const goAheadMsg = "go"

// goAhead is what PID 1 hands the supervisor once the machine is ready.
type goAhead struct {
	// root is a handle on PID 1's root, for the supervisor to move into.
	root int
	// console is the console, for the supervisor's fds 1 and 2, when PID
	// 1 opened it after the supervisor started; -1 otherwise.
	console int
	// netErr says why the network the host asked for is not up; "" when
	// it is. It travels after goAheadMsg, at most protocol.MaxNetError
	// bytes.
	netErr string
}

// sendGoAhead sends g on the go-ahead socket fd: goAheadMsg and the
// network's error in one message, with the root and, when there is one,
// the console as rights.
func sendGoAhead(fd int, g goAhead) error {
	fds := []int{g.root}
	if g.console >= 0 {
		fds = append(fds, g.console)
	}
	msg := goAheadMsg + g.netErr
	if len(msg) > len(goAheadMsg)+protocol.MaxNetError {
		msg = msg[:len(goAheadMsg)+protocol.MaxNetError]
	}
	return unix.Sendmsg(fd, []byte(msg), unix.UnixRights(fds...), nil, 0)
}

// awaitGoAhead waits, when PID 1 started this process early (see
// startSupervisor), until PID 1 sends the go-ahead with a handle on its
// root, moves into that root, and points fds 1 and 2 at the console when
// PID 1 sent one (see console.attach). Without goAheadEnv it returns at
// once.
func awaitGoAhead(c *console) (netErr string, err error) {
	v := os.Getenv(goAheadEnv)
	if v == "" {
		return "", nil
	}
	os.Unsetenv(goAheadEnv) // not for the commands it runs
	fd, err := strconv.Atoi(v)
	if err != nil {
		return "", fmt.Errorf("%s=%q is not a file descriptor", goAheadEnv, v)
	}
	defer unix.Close(fd)
	g, err := receiveGoAhead(fd)
	if err != nil {
		return "", err
	}
	defer unix.Close(g.root)
	if g.console >= 0 {
		cons := os.NewFile(uintptr(g.console), "console")
		err := c.attach(cons)
		cons.Close() // fds 1 and 2 hold it now
		if err != nil {
			return "", err
		}
	}
	if err := unix.Fchdir(g.root); err != nil {
		return "", fmt.Errorf("enter the root: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return "", fmt.Errorf("enter the root: %w", err)
	}
	return g.netErr, unix.Chdir("/")
}

// receiveGoAhead reads the go-ahead from the socket fd.
func receiveGoAhead(fd int) (goAhead, error) {
	buf := make([]byte, len(goAheadMsg)+protocol.MaxNetError)
	oob := make([]byte, unix.CmsgSpace(2*4))
	var (
		n, oobn int
		err     error
	)
	for {
		n, oobn, _, _, err = unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return goAhead{}, fmt.Errorf("wait for PID 1: %w", err)
	}
	msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
	var fds []int
	if perr == nil && len(msgs) == 1 {
		fds, perr = unix.ParseUnixRights(&msgs[0])
	}
	var bad error
	switch {
	case !strings.HasPrefix(string(buf[:n]), goAheadMsg):
		bad = errors.New("PID 1 ended before the machine was ready")
	case perr != nil || len(fds) < 1 || len(fds) > 2:
		bad = fmt.Errorf("PID 1 sent the go-ahead without its root (%v)", perr)
	}
	if bad != nil {
		for _, f := range fds {
			unix.Close(f)
		}
		return goAhead{}, bad
	}
	g := goAhead{root: fds[0], console: -1, netErr: string(buf[len(goAheadMsg):n])}
	if len(fds) == 2 {
		g.console = fds[1]
	}
	return g, nil
}

// toolRoot is where Sandbar's own tools are: supervisor.ToolRoot when the
// root is another image's (sandbar.tools), else "" (the root itself).
func toolRoot(cfg config) string {
	if cfg.root != "" && cfg.tools != "" {
		return toolsRoot
	}
	return ""
}
