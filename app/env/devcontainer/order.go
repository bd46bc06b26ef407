package devcontainer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// FeatureMeta is what a feature's devcontainer-feature.json says about
// order: features it needs installed first, with their options (dependsOn,
// a hard dependency, added to the install when missing), and ids it
// installs after when they are installed anyway (installsAfter, a soft
// one, matched without version).
type FeatureMeta struct {
	DependsOn     []Feature
	InstallsAfter []string
}

// maxFeatures bounds the features one install may have once dependencies
// are added, so hostile metadata cannot grow the list without end.
const maxFeatures = 100

// OrderFeatures gives the order to install features in, following the
// spec's dependsOn algorithm:
//
//   - The set is the features plus, recursively, every dependsOn of them.
//     Two features are the same when their ids and options are equal (the
//     spec compares digests, which are not known here; the id with its tag
//     stands for it). A feature added this way carries RequiredBy.
//   - A feature depends on its dependsOn (hard) and on every feature of the
//     set whose resource name is in its installsAfter (soft).
//   - overrideFeatureInstallOrder gives the n features it names the round
//     priority n-i; all others have 0.
//   - In rounds: every feature not yet installed whose dependencies all are
//     is a candidate; those of the highest priority among the candidates
//     are installed in this round, sorted by resource name, then id, then
//     more options first, then their names and values (the spec's round
//     stable sort). A round with no candidate is a cycle, and an error that
//     names the features in it.
//
// meta must hold the metadata of every feature in the set, keyed by ID; a
// missing one is an error, since installing in a guessed order could break
// a feature in a way that is hard to trace.
func OrderFeatures(features []Feature, meta map[string]FeatureMeta, override ...string) ([]Feature, error) {
	type node struct {
		f        Feature
		deps     []int
		priority int
		done     bool
	}
	var nodes []*node
	find := func(f Feature) int {
		for i, n := range nodes {
			if n.f.ID == f.ID && sameOptions(n.f.Options, f.Options) {
				return i
			}
		}
		return -1
	}
	for _, f := range features {
		if find(f) < 0 {
			nodes = append(nodes, &node{f: f})
		}
	}
	// Resolve dependsOn breadth first; nodes grows as it goes.
	for i := 0; i < len(nodes); i++ {
		n := nodes[i]
		m, ok := meta[n.f.ID]
		if !ok {
			return nil, fmt.Errorf("no metadata for feature %s: read its devcontainer-feature.json before ordering the install", n.f.ID)
		}
		for _, dep := range m.DependsOn {
			j := find(dep)
			if j < 0 {
				if len(nodes) >= maxFeatures {
					return nil, fmt.Errorf("features need more than %d features with their dependencies (dependsOn of %s): remove some features", maxFeatures, n.f.ID)
				}
				dep.RequiredBy = n.f.ID
				nodes = append(nodes, &node{f: dep})
				j = len(nodes) - 1
			}
			if j != i {
				n.deps = append(n.deps, j)
			}
		}
	}
	for i, n := range nodes {
		for _, after := range meta[n.f.ID].InstallsAfter {
			for j, o := range nodes {
				if j != i && o.f.ResourceName() == resourceName(after) && !slices.Contains(n.deps, j) {
					n.deps = append(n.deps, j)
				}
			}
		}
	}
	for k, id := range override {
		for _, n := range nodes {
			if n.f.ResourceName() == resourceName(id) {
				n.priority = len(override) - k
			}
		}
	}

	order := make([]Feature, 0, len(nodes))
	for len(order) < len(nodes) {
		var round []*node
		for _, n := range nodes {
			if n.done {
				continue
			}
			ready := true
			for _, j := range n.deps {
				ready = ready && nodes[j].done
			}
			if ready {
				round = append(round, n)
			}
		}
		if len(round) == 0 {
			cycle := findCycle(len(nodes), func(i int) []int {
				if nodes[i].done {
					return nil
				}
				return nodes[i].deps
			})
			names := make([]string, len(cycle))
			for k, i := range cycle {
				names[k] = nodes[i].f.ID
			}
			return nil, fmt.Errorf("features depend on each other in a cycle (%s), through dependsOn or installsAfter: remove one of them, or ask the feature's author to break the cycle", strings.Join(names, " → "))
		}
		top := round[0].priority
		for _, n := range round {
			top = max(top, n.priority)
		}
		round = slices.DeleteFunc(round, func(n *node) bool { return n.priority < top })
		slices.SortStableFunc(round, func(a, b *node) int { return compareFeatures(a.f, b.f) })
		for _, n := range round {
			n.done = true
			order = append(order, n.f)
		}
	}
	return order, nil
}

// findCycle gives one cycle of the graph as a path that returns to its
// first node (a → b → a); the caller knows there is one.
func findCycle(n int, deps func(int) []int) []int {
	const (
		unseen = iota
		onPath
		finished
	)
	state := make([]int, n)
	var path []int
	var walk func(int) []int
	walk = func(i int) []int {
		state[i] = onPath
		path = append(path, i)
		for _, j := range deps(i) {
			switch state[j] {
			case onPath:
				at := slices.Index(path, j)
				return append(slices.Clone(path[at:]), j)
			case unseen:
				if c := walk(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = finished
		return nil
	}
	for i := 0; i < n; i++ {
		if state[i] == unseen && len(deps(i)) > 0 {
			if c := walk(i); c != nil {
				return c
			}
		}
	}
	return nil
}

func sameOptions(a, b []Option) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = sortedOptions(a), sortedOptions(b)
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

func sortedOptions(o []Option) []Option {
	o = slices.Clone(o)
	slices.SortFunc(o, func(a, b Option) int { return cmp.Compare(a.Name, b.Name) })
	return o
}

// compareFeatures is the spec's round stable sort, short of tags compared
// as versions: resource name, id, more options first, option names, values.
func compareFeatures(a, b Feature) int {
	if c := cmp.Compare(a.ResourceName(), b.ResourceName()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b.Options), len(a.Options)); c != 0 {
		return c
	}
	ao, bo := sortedOptions(a.Options), sortedOptions(b.Options)
	for i := range ao {
		if c := cmp.Compare(ao[i].Name, bo[i].Name); c != 0 {
			return c
		}
	}
	for i := range ao {
		if c := cmp.Compare(ao[i].Value, bo[i].Value); c != 0 {
			return c
		}
	}
	return 0
}
