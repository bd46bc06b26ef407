package vz

import (
	"log/slog"
	"time"
)

// Config tunes the backend; the zero value is ready to use.
type Config struct {
	// ConnectTimeout bounds how long Boot waits for the guest supervisor
	// to listen on vsock; default 30 s.
	ConnectTimeout time.Duration
	Logger         *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
