//go:build !linux

package registrytest

import "syscall"

// childAttr: only Linux has a parent-death signal; t.Cleanup stops the
// server elsewhere.
func childAttr() *syscall.SysProcAttr { return nil }
