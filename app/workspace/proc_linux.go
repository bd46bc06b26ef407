package workspace

import "syscall"

// procAttr makes a git child die with this process, so a killed app never
// leaves a clone or fetch running on its own.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
