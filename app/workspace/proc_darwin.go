package workspace

import "syscall"

// procAttr: macOS has no Pdeathsig. git commands here are short and bound
// to a context, and a clone left half made by a killed app is removed with
// its session directory.
func procAttr() *syscall.SysProcAttr { return nil }
