package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sandbar/app/secrets"
)

// An engine started from another login session (a `sandbar serve` that a
// command in an ssh session, or in another desktop session, started)
// cannot reach this session's Secret Service: every Start and Restart it
// is asked for fails with the keyring's ErrUnavailable. A client that can
// reach the keyring itself asks such an engine to yield (OpYield) when it
// runs no session, waits for it to let go, and starts its own, which
// serves from now on, Restart and the CA of brokered HTTPS included.
//
// Passing the secrets along with each request was the other way: it
// would leave an engine that still cannot reach the keyring for what
// comes later (Restart, the CA, the next start from the app), and put
// the values on the wire for every start. Handing over keeps the
// keyring read in one place, by a process that can.

// handOverWait bounds the wait for a yielding engine to let go.
const handOverWait = 10 * time.Second

// withKeyring runs op in the engine; when the engine cannot reach the
// keyring and this process can (KeyringOK), the engine is asked to hand
// over and op runs again in the engine that replaces it.
func withKeyring[T any](ctx context.Context, c *Client, op func() (T, error)) (T, error) {
	v, err := op()
	if err == nil || !errors.Is(err, secrets.ErrUnavailable) || c.KeyringOK == nil {
		return v, err
	}
	if kerr := c.KeyringOK(ctx); kerr != nil {
		return v, err // neither can: the error says what to do
	}
	if herr := c.handOver(ctx); herr != nil {
		return v, fmt.Errorf("%w; %w", err, herr)
	}
	return op()
}

// handOver asks the engine to yield and waits until it no longer answers,
// so that the next call starts an engine in this login session.
func (c *Client) handOver(ctx context.Context) error {
	r, err := c.Engine(ctx)
	if err != nil {
		return err
	}
	rep, err := unaryCall[YieldReply](ctx, r, OpYield, None{})
	if err != nil {
		return fmt.Errorf("ask the Sandbar engine (process %d), which cannot reach the keyring, to hand over: %w", r.PID(), err)
	}
	if !rep.Yielded {
		return fmt.Errorf("it cannot reach the keyring from its login session, and cannot hand over to this one: %s", rep.Reason)
	}
	if c.Logger != nil {
		c.Logger.Info("the Sandbar engine could not reach the keyring and handed over", "pid", r.PID())
	}
	deadline := time.Now().Add(handOverWait)
	for {
		next, err := Dial(ctx, r.paths)
		if err != nil || next.PID() != r.PID() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Sandbar engine (process %d) agreed to hand over but still answers after %s", r.PID(), handOverWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
