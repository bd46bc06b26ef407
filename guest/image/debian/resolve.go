package debian

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Resolve returns names and everything they need, transitively, through
// Pre-Depends and Depends, sorted by name. Of alternatives ("a | b") the
// first that can be had is taken, unless one is already selected. A
// virtual name is satisfied by a real package of that name if there is
// one, else by a provider: one already selected, else the one with the
// highest Priority (required, important, standard, …), then the first by
// name. Version relations are checked against the archive's version.
//
// Recommends, Suggests, Conflicts and Breaks are not considered: the
// result is the smallest set that satisfies the hard dependencies, and a
// set with conflicts in it is the caller's list to fix. The result is the
// same for the same names (in the same order) and the same index.
func (ix *Index) Resolve(names []string) ([]Package, error) {
	r := &resolver{ix: ix, selected: map[string]Package{}}
	for _, n := range names {
		for _, group := range parseDeps(n) {
			r.queue = append(r.queue, need{alts: group})
		}
	}
	for len(r.queue) > 0 {
		n := r.queue[0]
		r.queue = r.queue[1:]
		if err := r.satisfy(n); err != nil {
			return nil, err
		}
	}
	out := make([]Package, 0, len(r.selected))
	for _, p := range r.selected {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Package) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// need is one dependency group still to satisfy.
type need struct {
	alts []dep
	by   string // the package that has it; empty for a name asked for
}

type resolver struct {
	ix       *Index
	selected map[string]Package
	queue    []need
}

func (r *resolver) satisfy(n need) error {
	for _, d := range n.alts {
		if r.satisfiedBySelected(d) {
			return nil
		}
	}
	for _, d := range n.alts {
		if p, ok := r.candidate(d); ok {
			r.selected[p.Name] = p
			for _, field := range []string{p.PreDepends, p.Depends} {
				for _, group := range parseDeps(field) {
					r.queue = append(r.queue, need{alts: group, by: p.Name})
				}
			}
			return nil
		}
	}
	return r.explain(n)
}

func (r *resolver) satisfiedBySelected(d dep) bool {
	if p, ok := r.selected[d.name]; ok && versionOK(p.Version, d) {
		return true
	}
	for _, pv := range r.ix.providers[d.name] {
		if _, ok := r.selected[pv.pkg]; ok && provideOK(pv, d) {
			return true
		}
	}
	return false
}

// candidate picks the package that would satisfy d, if any.
func (r *resolver) candidate(d dep) (Package, bool) {
	if p, ok := r.ix.packages[d.name]; ok && versionOK(p.Version, d) {
		return p, true
	}
	var best Package
	found := false
	for _, pv := range r.ix.providers[d.name] {
		p, ok := r.ix.packages[pv.pkg]
		if !ok || !provideOK(pv, d) {
			continue
		}
		if !found || better(p, best) {
			best, found = p, true
		}
	}
	return best, found
}

// better orders providers: higher priority first, then by name.
func better(a, b Package) bool {
	if ra, rb := priorityRank(a.Priority), priorityRank(b.Priority); ra != rb {
		return ra < rb
	}
	return a.Name < b.Name
}

func priorityRank(p string) int {
	switch p {
	case "required":
		return 0
	case "important":
		return 1
	case "standard":
		return 2
	case "optional":
		return 3
	case "extra":
		return 4
	}
	return 5
}

func versionOK(v string, d dep) bool {
	if d.op == "" {
		return true
	}
	ok, err := Satisfies(v, d.op, d.version)
	return err == nil && ok
}

// provideOK says whether a Provides entry satisfies d: a versioned
// dependency needs a versioned Provides that meets it.
func provideOK(pv provided, d dep) bool {
	if d.op == "" {
		return true
	}
	return pv.version != "" && versionOK(pv.version, d)
}

// explain says why no alternative of n can be had.
func (r *resolver) explain(n need) error {
	by := "asked for"
	if n.by != "" {
		by = "needed by " + n.by
	}
	var why []string
	for _, d := range n.alts {
		p, real := r.ix.packages[d.name]
		switch {
		case real:
			why = append(why, fmt.Sprintf("%s has version %s, which does not satisfy %s", d.name, p.Version, d))
		case len(r.ix.providers[d.name]) > 0:
			why = append(why, fmt.Sprintf("no provider of %s satisfies %s", d.name, d))
		default:
			why = append(why, fmt.Sprintf("package %s is not in %s", d.name, r.ix.where))
		}
	}
	if len(n.alts) == 1 {
		if _, real := r.ix.packages[n.alts[0].name]; !real && len(r.ix.providers[n.alts[0].name]) == 0 {
			return fmt.Errorf("package %s (%s) is not in %s: check the name, or drop it from the package list", n.alts[0].name, by, r.ix.where)
		}
		return fmt.Errorf("%s (%s) cannot be satisfied from %s: %s", n.alts[0], by, r.ix.where, why[0])
	}
	alts := make([]string, len(n.alts))
	for i, d := range n.alts {
		alts[i] = d.String()
	}
	return fmt.Errorf("none of %s (%s) can be had from %s: %s", strings.Join(alts, " | "), by, r.ix.where, strings.Join(why, "; "))
}
