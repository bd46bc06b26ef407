package supervisor

import (
	"os"
	"syscall"
)

// sysProcAttr puts the child in its own process group, kills it when the
// supervisor dies, and switches user when that is a different one.
func sysProcAttr(u User) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if u.UID != os.Getuid() {
		a.Credential = &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}
	}
	return a
}
