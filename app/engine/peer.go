package engine

import (
	"fmt"
	"net"
	"os"
)

// samePerson checks that the process at the other end of c runs as this
// one's user: only the person's own processes may drive the engine, and a
// client talks only to an engine of its own user's (one another user
// started at a squatted socket path would see and drive its sessions).
func samePerson(c net.Conn, other string) error {
	uid, err := peerUID(c)
	if err != nil {
		return err
	}
	if uid != os.Getuid() {
		return fmt.Errorf("the %s at the other end of the engine's socket runs as user %d, not as you (%d)", other, uid, os.Getuid())
	}
	return nil
}

// peerUID is the user of the process at the other end of c, as the
// kernel says (socketPeerUID: the platform's own call on the socket).
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, fmt.Errorf("not a unix socket: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, credErr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, credErr = socketPeerUID(int(fd)) }); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, fmt.Errorf("ask who is at the other end of the engine's socket: %w", credErr)
	}
	return uid, nil
}
