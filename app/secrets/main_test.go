package secrets_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"sandbar/tests/keyringtest"
)

// The tests run inside a private D-Bus session with a real gnome-keyring
// (see keyringtest); those that need it call keyringtest.Require.
func TestMain(m *testing.M) { keyringtest.Main(m) }

// names is a thin NameStore: a set in memory. app/store's real one is
// tested with it.
type names struct {
	mu   sync.Mutex
	set  map[string]bool
	fail error // returned by every call when set
}

func newNames(initial ...string) *names {
	n := &names{set: map[string]bool{}}
	for _, s := range initial {
		n.set[s] = true
	}
	return n
}

func (n *names) AddSecretName(ctx context.Context, name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		return n.fail
	}
	n.set[name] = true
	return nil
}

func (n *names) SecretNames(ctx context.Context) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		return nil, n.fail
	}
	var out []string
	for s := range n.set {
		out = append(out, s)
	}
	return out, nil
}

func (n *names) RemoveSecretName(ctx context.Context, name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		return n.fail
	}
	if !n.set[name] {
		return errors.New("no such name")
	}
	delete(n.set, name)
	return nil
}

func (n *names) has(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.set[name]
}

func (n *names) list() []string {
	s, _ := n.SecretNames(context.Background())
	slices.Sort(s)
	return s
}
