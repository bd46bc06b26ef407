package registrytest

import "syscall"

// childAttr makes a test's server die with the test binary.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
