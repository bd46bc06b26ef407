package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ptraceScopeFile is Yama's kernel.yama.ptrace_scope.
const ptraceScopeFile = "/proc/sys/kernel/yama/ptrace_scope"

// restrictPtrace sets kernel.yama.ptrace_scope to 1 (at path): a process
// may then trace, and take file descriptors from (pidfd_getfd), only its
// own descendants. Without it any program the agent runs, as the agent
// user, can take the agent's stdout and forge what the host logs.
func restrictPtrace(path string) error {
	err := os.WriteFile(path, []byte("1\n"), 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("kernel.yama.ptrace_scope not set: this kernel has no Yama (%s is missing), so the agent's programs may trace each other", path)
	}
	if err != nil {
		return fmt.Errorf("set kernel.yama.ptrace_scope: %w", err)
	}
	return nil
}
