package netstack

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Framing is how Ethernet frames travel between the hypervisor and the
// network.
type Framing int

const (
	// Stream is a byte stream of frames, each behind its length as a
	// 32-bit big-endian number: QEMU's -netdev socket/stream
	// (gvisor-tap-vsock's "qemu" protocol).
	Stream Framing = iota
	// Datagram is one frame per datagram: Virtualization.framework's
	// VZFileHandleNetworkDeviceAttachment (gvisor-tap-vsock's "vfkit"
	// protocol).
	Datagram
)

func (f Framing) String() string {
	if f == Datagram {
		return "datagram"
	}
	return "stream"
}

const (
	// txQueueFrames and txQueueBytes bound the frames waiting for the
	// hypervisor to take them. A guest that stops draining its NIC makes
	// the network drop frames, as a full NIC ring does, instead of
	// blocking the stack.
	txQueueFrames = 1024
	txQueueBytes  = 16 << 20
	// maxDiscard is the largest oversized frame a stream skips; a length
	// beyond it means the stream cannot be trusted and ends.
	maxDiscard = 1 << 20
)

// frameIO moves frames between the hypervisor's connection and the stack:
// it is the tap.NetworkSwitch the link endpoint writes to, and it reads,
// checks and delivers what the guest sends.
type frameIO struct {
	framing  Framing
	maxFrame int // header included
	gateway  tcpip.LinkAddress
	guest    tcpip.LinkAddress

	conn  net.Conn
	queue chan []byte
	// queued counts the bytes in queue.
	queued atomic.Int64
	closed chan struct{}
	once   sync.Once

	stats *Stats
}

func newFrameIO(conn net.Conn, f Framing, mtu int, gateway, guest tcpip.LinkAddress, stats *Stats) *frameIO {
	return &frameIO{
		framing: f, maxFrame: mtu + header.EthernetMinimumSize,
		gateway: gateway, guest: guest,
		conn: conn, queue: make(chan []byte, txQueueFrames), closed: make(chan struct{}),
		stats: stats,
	}
}

// DeliverNetworkPacket queues a frame the stack sent for the guest. It
// never blocks: a full queue drops the frame.
func (l *frameIO) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	frame := pkt.ToView().AsSlice()
	if len(frame) > l.maxFrame {
		l.stats.TxDropped.Add(1)
		return
	}
	if l.queued.Add(int64(len(frame))) > txQueueBytes {
		l.queued.Add(-int64(len(frame)))
		l.stats.TxDropped.Add(1)
		return
	}
	select {
	case l.queue <- frame:
	default:
		l.queued.Add(-int64(len(frame)))
		l.stats.TxDropped.Add(1)
	}
}

// close ends both directions.
func (l *frameIO) close() {
	l.once.Do(func() {
		close(l.closed)
		l.conn.Close()
	})
}

// writeLoop sends queued frames to the hypervisor, several to a write
// where the framing allows it.
func (l *frameIO) writeLoop() error {
	var bufs net.Buffers
	hdrs := make([]byte, 0, 4*64)
	for {
		var frame []byte
		select {
		case frame = <-l.queue:
		case <-l.closed:
			return nil
		}
		if l.framing == Datagram {
			l.queued.Add(-int64(len(frame)))
			if err := l.writeDatagram(frame); err != nil {
				return err
			}
			continue
		}
		bufs, hdrs = bufs[:0], hdrs[:0]
		n := 0
	batch:
		for {
			hdrs = binary.BigEndian.AppendUint32(hdrs, uint32(len(frame)))
			bufs = append(bufs, hdrs[len(hdrs)-4:], frame)
			l.queued.Add(-int64(len(frame)))
			n += len(frame)
			if len(bufs) >= 2*64 {
				break
			}
			select {
			case frame = <-l.queue:
			default:
				break batch
			}
		}
		frames := len(bufs) / 2
		if _, err := bufs.WriteTo(l.conn); err != nil {
			return err
		}
		l.stats.TxFrames.Add(uint64(frames))
		l.stats.TxBytes.Add(uint64(n))
	}
}

// writeDatagram sends one frame as a datagram. A full socket buffer is
// waited out: macOS answers ENOBUFS where Linux would block (the failure
// gvisor-tap-vsock met with vfkit). A frame the socket can never take
// (EMSGSIZE) is dropped, as a NIC drops one past its MTU. Any other
// error is the link's.
func (l *frameIO) writeDatagram(frame []byte) error {
	backoff := 50 * time.Microsecond
	for {
		_, err := l.conn.Write(frame)
		switch {
		case err == nil:
			l.stats.TxFrames.Add(1)
			l.stats.TxBytes.Add(uint64(len(frame)))
			return nil
		case errors.Is(err, syscall.EMSGSIZE):
			l.stats.TxDropped.Add(1)
			return nil
		case !errors.Is(err, syscall.ENOBUFS):
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-l.closed:
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, time.Millisecond)
	}
}

// readLoop reads frames from the hypervisor until the connection ends and
// hands the ones that pass check to deliver.
func (l *frameIO) readLoop(deliver func(frame []byte)) error {
	buf := make([]byte, max(l.maxFrame, 64<<10))
	if l.framing == Datagram {
		for {
			n, err := l.conn.Read(buf)
			if err != nil {
				return err
			}
			l.rx(buf[:n], deliver)
		}
	}
	r := bufio.NewReaderSize(l.conn, 256<<10)
	var hdr [4]byte
	for {
		if _, err := readFull(r, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n > len(buf) {
			// Larger than any frame this link carries: skip it if the
			// stream can be followed past it, else give up on the stream.
			if n > maxDiscard {
				return fmt.Errorf("a frame of %d bytes: the hypervisor's stream is corrupt", n)
			}
			if _, err := r.Discard(n); err != nil {
				return err
			}
			l.stats.RxDropped.Add(1)
			continue
		}
		if _, err := readFull(r, buf[:n]); err != nil {
			return err
		}
		l.rx(buf[:n], deliver)
	}
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n, err := io.ReadFull(r, b)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

// rx checks one frame from the guest: a whole Ethernet header, no larger
// than the link's MTU, from the guest's own address, to the gateway or to
// everyone, carrying IPv4 or ARP. Anything else is dropped: the guest's
// frames are hostile input.
func (l *frameIO) rx(frame []byte, deliver func([]byte)) {
	if len(frame) < header.EthernetMinimumSize || len(frame) > l.maxFrame {
		l.stats.RxDropped.Add(1)
		return
	}
	eth := header.Ethernet(frame)
	if eth.SourceAddress() != l.guest {
		l.stats.RxDropped.Add(1)
		return
	}
	if dst := eth.DestinationAddress(); dst != l.gateway && dst != header.EthernetBroadcastAddress {
		l.stats.RxDropped.Add(1)
		return
	}
	switch eth.Type() {
	case header.IPv4ProtocolNumber, header.ARPProtocolNumber:
	default:
		l.stats.RxDropped.Add(1)
		return
	}
	l.stats.RxFrames.Add(1)
	l.stats.RxBytes.Add(uint64(len(frame)))
	deliver(frame)
}

// packetFrom makes the stack's packet of a checked frame's payload; the
// frame is copied, so its buffer can be reused.
func packetFrom(frame []byte) *stack.PacketBuffer {
	data := buffer.MakeWithData(frame)
	data.TrimFront(header.EthernetMinimumSize)
	return stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: data})
}
