package main

import (
	"go/types"
	"sync"
)

// depCache keeps type-checked dependencies (never main-module packages)
// across runs in one process, keyed by architecture, import path and
// directory, so that runs over the same dependencies check the standard
// library once. The key holds the file lists too, so a run with other
// build tags checks afresh. The command makes one run; tests make many.
type depCache struct {
	mu   sync.Mutex
	pkgs map[depKey]*cachedDep
}

type depKey struct {
	arch, importPath, dir, files string
}

// cachedDep is a finished dependency: its package object, built against
// the cached objects of its own imports, and what checking it found.
type cachedDep struct {
	types       *types.Package
	unavailable string
	diags       []diag
}

func newDepCache() *depCache {
	return &depCache{pkgs: make(map[depKey]*cachedDep)}
}

func (c *depCache) load(k depKey) (*cachedDep, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.pkgs[k]
	return d, ok
}

// loadOrStore stores d under k unless a concurrent run stored one first,
// and returns the one kept, so every run sees the same object for k.
func (c *depCache) loadOrStore(k depKey, d *cachedDep) *cachedDep {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pkgs[k]; ok {
		return old
	}
	c.pkgs[k] = d
	return d
}
