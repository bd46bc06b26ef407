package session

import (
	"context"
	"io"
	"time"

	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Client is the session manager of a Sandbar process that is not its data
// directory's engine: a window opened while `sandbar serve` (started by a
// CLI command) or another window runs the sessions. It reads the store and
// the saved work of stopped sessions itself, through its Manager, which
// runs nothing, and asks the engine for everything that touches a VM:
// the changes, diffs and export of a live session come from the engine,
// since only the process that runs a VM can ask it. Engine reaches the engine,
// starting a headless one when none answers, so that the engine Client
// used quitting or dying costs a moment of reconnection, not the window.
type Client struct {
	*Manager
	Engine func(ctx context.Context) (*Remote, error)
}

// Start starts a session in the engine.
func (c *Client) Start(ctx context.Context, o Options) (store.Session, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return store.Session{}, err
	}
	return r.Start(ctx, o)
}

// Stop stops a session in the engine.
func (c *Client) Stop(ctx context.Context, id string) (store.Session, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return store.Session{}, err
	}
	return r.Stop(ctx, id)
}

// Restart restarts a session in the engine.
func (c *Client) Restart(ctx context.Context, id string) (store.Session, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return store.Session{}, err
	}
	return r.Restart(ctx, id)
}

// Remove removes a session through the engine, which stops it first if
// it runs.
func (c *Client) Remove(ctx context.Context, id string, force bool) error {
	r, err := c.Engine(ctx)
	if err != nil {
		return err
	}
	return r.Remove(ctx, id, force)
}

// Merge merges a session's branch through the engine.
func (c *Client) Merge(ctx context.Context, id string, o MergeOptions) (workspace.MergeResult, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return workspace.MergeResult{}, err
	}
	return r.Merge(ctx, id, o)
}

// Chat sends text to a session's agent in the engine.
func (c *Client) Chat(ctx context.Context, id, text string) error {
	r, err := c.Engine(ctx)
	if err != nil {
		return err
	}
	return r.Chat(ctx, id, text)
}

// Exec runs a command in a session's VM, through the engine.
func (c *Client) Exec(ctx context.Context, id string, req sandbox.ExecRequest, stdout, stderr io.Writer) (sandbox.ExecResult, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return r.Exec(ctx, id, req, stdout, stderr)
}

// inEngine reports whether session ref is live, so that its VM, if it
// has one, belongs to the engine. One whose owner died is the engine's
// too: it marks it interrupted and answers from the saved work.
func (c *Client) inEngine(ctx context.Context, ref string) bool {
	s, err := c.Manager.Get(ctx, ref)
	return err == nil && Live(s.State)
}

// Changes reads a live session's changes through the engine, and a
// stopped one's from its saved work here.
func (c *Client) Changes(ctx context.Context, id string) (workspace.Changes, error) {
	if !c.inEngine(ctx, id) {
		return c.Manager.Changes(ctx, id)
	}
	r, err := c.Engine(ctx)
	if err != nil {
		return workspace.Changes{}, err
	}
	return r.Changes(ctx, id)
}

// FileDiff is one file's diff, through the engine for a live session.
func (c *Client) FileDiff(ctx context.Context, id string, f workspace.FileChange) (string, error) {
	if !c.inEngine(ctx, id) {
		return c.Manager.FileDiff(ctx, id, f)
	}
	r, err := c.Engine(ctx)
	if err != nil {
		return "", err
	}
	return r.FileDiff(ctx, id, f)
}

// Export writes a session's read-only export; the engine saves a live
// session's work first.
func (c *Client) Export(ctx context.Context, id string) (string, time.Time, error) {
	if !c.inEngine(ctx, id) {
		return c.Manager.Export(ctx, id)
	}
	r, err := c.Engine(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	return r.Export(ctx, id)
}

// clientRetryMax bounds the wait between attempts to reach an engine.
const clientRetryMax = 5 * time.Second

// Subscribe follows the engine's events until ctx is done. The channel
// stays open across engines: when the engine hangs up (it quit, or died)
// Subscribe reaches the next one (Engine starts it) and goes on; events
// in between are not seen, and readers resynchronise from the store as
// they do anyway.
func (c *Client) Subscribe(ctx context.Context, session string) <-chan Event {
	out := make(chan Event, 256)
	go func() {
		defer close(out)
		wait := 100 * time.Millisecond
		for ctx.Err() == nil {
			lasted, err := c.follow(ctx, session, out)
			if err != nil && ctx.Err() == nil {
				c.log.Warn("reach the Sandbar engine for events", "err", err, "retry in", wait)
			}
			if lasted > clientRetryMax {
				wait = 100 * time.Millisecond
				continue
			}
			// An engine that cannot be reached, or hangs up at once, is
			// not hammered.
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, clientRetryMax)
		}
	}()
	return out
}

// follow passes one engine's events to out until that engine hangs up or
// ctx is done. It returns how long the engine's stream lasted, or why the
// engine could not be followed at all.
func (c *Client) follow(ctx context.Context, session string, out chan<- Event) (time.Duration, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return 0, err
	}
	ch, err := r.Subscribe(ctx, session)
	if err != nil {
		return 0, err
	}
	began := time.Now()
	for ev := range ch {
		select {
		case out <- ev:
		case <-ctx.Done():
			return time.Since(began), nil
		}
	}
	return time.Since(began), nil
}

// AddNetRule adds a network rule through the engine, which runs the
// sessions that follow it.
func (c *Client) AddNetRule(ctx context.Context, ref string, scope NetScope, action, target string) (policy.Rule, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return policy.Rule{}, err
	}
	line, err := r.AddNetRule(ctx, ref, scope, action, target)
	if err != nil {
		return policy.Rule{}, err
	}
	return policy.ParseRule(line, scope.source())
}

// SetNetworkRules replaces a scope's rules through the engine.
func (c *Client) SetNetworkRules(ctx context.Context, scope NetScope, ref, text string, _ int64) error {
	r, err := c.Engine(ctx)
	if err != nil {
		return err
	}
	return r.SetNetworkRules(ctx, scope, ref, text)
}

// Ports lists a running session's published ports, from the engine.
func (c *Client) Ports(ctx context.Context, id string) ([]netstack.Port, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return nil, err
	}
	return r.Ports(ctx, id)
}

// PublishPort publishes a guest port through the engine.
func (c *Client) PublishPort(ctx context.Context, id string, guest, host uint16) (netstack.Port, error) {
	r, err := c.Engine(ctx)
	if err != nil {
		return netstack.Port{}, err
	}
	return r.PublishPort(ctx, id, guest, host)
}

// UnpublishPort closes a published port through the engine.
func (c *Client) UnpublishPort(ctx context.Context, id string, guest uint16) error {
	r, err := c.Engine(ctx)
	if err != nil {
		return err
	}
	return r.UnpublishPort(ctx, id, guest)
}
