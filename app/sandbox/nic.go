package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"sandbar/vm"
)

// ErrNoSocketNetwork says a hypervisor cannot attach a guest NIC to a
// socket (its Info lacks vm.NetworkSocket), so Sandbar's own network
// cannot reach its guests.
var ErrNoSocketNetwork = errors.New("this hypervisor cannot attach a guest NIC to Sandbar's network")

// nicBuffer is the socket buffer each end of a NIC's socket pair asks
// for: several of the largest frames, so a burst does not stall.
const nicBuffer = 4 << 20

// NICPair makes the socket pair that carries a guest NIC's frames for hv:
// host is Sandbar's end (for netstack.Network.Serve), guest the file to
// put in vm.NIC (the hypervisor's end; close it once the VM has stopped).
func NICPair(hv vm.Hypervisor) (host net.Conn, guest *os.File, framing vm.Framing, err error) {
	info := hv.Info()
	if !info.Supports(vm.NetworkSocket) {
		return nil, nil, 0, fmt.Errorf("%s: %w", hv.Name(), ErrNoSocketNetwork)
	}
	framing = info.SocketFraming
	typ := syscall.SOCK_STREAM
	if framing == vm.FramingDatagram {
		typ = syscall.SOCK_DGRAM
	}
	// Made and marked close-on-exec under ForkLock, as the net package
	// makes its sockets: a child another goroutine starts in between (a
	// hypervisor of another session, git) would otherwise inherit both
	// ends, holding this session's link open and able to carry frames
	// into a VM not its own.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, typ, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("NIC socket pair: %w", err)
	}
	snd, rcv := nicBuffer, nicBuffer
	if framing == vm.FramingDatagram {
		// Apple's advice for VZFileHandleNetworkDeviceAttachment: a
		// receive buffer four times the send buffer, each able to hold
		// several of the largest datagrams.
		snd, rcv = nicBuffer/4, nicBuffer
	}
	for _, fd := range fds {
		// Best effort: the system's limits may hold a buffer smaller.
		syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, snd)
		syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcv)
	}
	hostFile := os.NewFile(uintptr(fds[0]), "sandbar-nic")
	guest = os.NewFile(uintptr(fds[1]), "sandbar-nic-guest")
	host, err = net.FileConn(hostFile)
	hostFile.Close() // FileConn made its own copy
	if err != nil {
		guest.Close()
		return nil, nil, 0, fmt.Errorf("NIC socket: %w", err)
	}
	return host, guest, framing, nil
}
