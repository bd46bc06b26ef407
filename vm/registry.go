package vm

import (
	"fmt"
	"sort"
	"strings"
)

// Registry holds the backends a build knows, keyed by name, and which one
// is the platform default. main fills it; tests fill their own.
type Registry struct {
	backends map[string]Hypervisor
	def      string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{backends: map[string]Hypervisor{}} }

// Register adds a backend; the first one registered, or one registered as
// default, is what Default returns.
func (r *Registry) Register(h Hypervisor, isDefault bool) {
	r.backends[h.Name()] = h
	if isDefault || r.def == "" {
		r.def = h.Name()
	}
}

// Get returns the backend of that name; "" means the default.
func (r *Registry) Get(name string) (Hypervisor, error) {
	if name == "" {
		name = r.def
	}
	h, ok := r.backends[name]
	if !ok {
		if len(r.backends) == 0 {
			return nil, fmt.Errorf("no hypervisor backend is built into this sandbar: %w", ErrNotFound)
		}
		return nil, fmt.Errorf("hypervisor %q: %w (known: %s)", name, ErrNotFound, strings.Join(r.Names(), ", "))
	}
	return h, nil
}

// Default is the platform's backend.
func (r *Registry) Default() (Hypervisor, error) { return r.Get("") }

// Names lists the registered backends, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.backends))
	for n := range r.backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
