package engine

import "golang.org/x/sys/unix"

// socketPeerUID asks macOS who is at the other end of socket fd
// (LOCAL_PEERCRED).
func socketPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
