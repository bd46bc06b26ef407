//go:build linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"

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
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	conn, err := supervisor.OpenChannel(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbar-init: open the host channel: %v\n", err)
		return 1
	}
	defer conn.Close()
	s := supervisor.New(supervisor.Config{Sys: supervisor.LinuxSystem{}, Logger: log})
	if err := s.Serve(ctx, conn); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "sandbar-init: supervisor: %v\n", err)
		return 1
	}
	return 0
}
