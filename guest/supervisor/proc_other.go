//go:build !linux

package supervisor

import (
	"os"
	"syscall"
)

// sysProcAttr puts the child in its own process group and switches user
// when that is a different one. Only Linux has Pdeathsig; the supervisor
// runs on Linux, this file keeps the package compiling elsewhere.
func sysProcAttr(u User) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if u.UID != os.Getuid() {
		a.Credential = &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}
	}
	return a
}
