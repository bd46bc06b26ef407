package supervisor

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"sandbar/guest/protocol"
)

// Listening ports: the host publishes the guest's servers through its
// userspace network, which reaches the guest only at its own address. The
// supervisor polls the kernel's socket tables (they offer no change
// events), tells the host the set of ports it can reach (protocol.EvPorts),
// and relays the ones a program listens on at loopback only (a dev
// server's default) from the guest's address (see relays).
//
// It starts with the first start, like stats, and only when the guest has
// an address (Config.GuestIP): without a network no port is reachable.
// Limits a hostile agent meets: each table is read up to maxSocketTable
// bytes (about 25,000 sockets; the kernel lists listeners first), at most
// protocol.MaxPorts ports are reported, at most maxRelays relayed.
const (
	// defaultPortsInterval is how often the tables are read.
	defaultPortsInterval = time.Second
	// maxSocketTable bounds the bytes read of /proc/net/tcp and tcp6.
	maxSocketTable = 4 << 20
)

// tcpListen is the st column of a socket in the LISTEN state.
const tcpListen = 0x0A

// listener is one LISTEN socket of /proc/net/tcp or tcp6. A v4-mapped
// IPv6 address is kept as the IPv4 one.
type listener struct {
	addr netip.Addr
	port uint16
}

// parseSocketTable appends to out the listeners of one /proc/net/tcp or
// /proc/net/tcp6 text. Lines it cannot read are skipped, not fatal: the
// kernel's format has not changed in decades, but the text may be cut
// short by the read bound.
//
// Each line is "sl local_address rem_address st ...", the address as hex
// of the kernel's 32-bit words in the machine's byte order (one for IPv4,
// four for IPv6) and the port as big-endian hex: 127.0.0.1:5173 reads
// "0100007F:1435" on a little-endian machine.
func parseSocketTable(data []byte, out []listener) []listener {
	for line := range bytes.Lines(data) {
		f := bytes.Fields(line)
		if len(f) < 4 || !bytes.HasSuffix(f[0], []byte(":")) {
			continue // the header, or a line cut short
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil || st != tcpListen {
			continue
		}
		l, ok := parseSocketAddr(f[1])
		if ok && l.port != 0 {
			out = append(out, l)
		}
	}
	return out
}

// parseSocketAddr reads "ADDR:PORT" of a socket table.
func parseSocketAddr(b []byte) (listener, bool) {
	addrHex, portHex, ok := bytes.Cut(b, []byte(":"))
	if !ok || len(portHex) != 4 || (len(addrHex) != 8 && len(addrHex) != 32) {
		return listener{}, false
	}
	port, err := strconv.ParseUint(string(portHex), 16, 16)
	if err != nil {
		return listener{}, false
	}
	var raw [16]byte
	if _, err := hex.Decode(raw[:len(addrHex)/2], addrHex); err != nil {
		return listener{}, false
	}
	// Each word was printed as a number: its bytes come out in the
	// machine's order, big-endian in the text.
	var ip [16]byte
	for i := 0; i < len(addrHex)/2; i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	var addr netip.Addr
	if len(addrHex) == 8 {
		addr = netip.AddrFrom4([4]byte(ip[:4]))
	} else {
		addr = netip.AddrFrom16(ip).Unmap()
	}
	return listener{addr: addr, port: uint16(port)}, true
}

// portPlan is what the listeners of one moment say.
type portPlan struct {
	// reachable lists, sorted, the ports with a listener the host can
	// reach: on a wildcard address or the guest's own.
	reachable []uint16
	// loopback maps each other port with a loopback listener to the
	// address to relay it to: 127.0.0.1 when listened on, else another
	// 127.0.0.0/8 address, else ::1.
	loopback map[uint16]netip.Addr
}

// planPorts classifies listeners. ours reports the supervisor's own relay
// sockets, which are left out. A port listened on only at other
// addresses (another interface's) is neither reachable nor relayed.
func planPorts(ls []listener, guest netip.Addr, ours func(listener) bool) portPlan {
	reachable := make(map[uint16]bool)
	loopback := make(map[uint16]netip.Addr)
	for _, l := range ls {
		if ours(l) {
			continue
		}
		switch {
		case l.addr.IsUnspecified() || l.addr == guest:
			reachable[l.port] = true
		case l.addr.IsLoopback():
			cur, seen := loopback[l.port]
			if !seen || better(l.addr, cur) {
				loopback[l.port] = l.addr
			}
		}
	}
	p := portPlan{loopback: make(map[uint16]netip.Addr)}
	for port := range reachable {
		p.reachable = append(p.reachable, port)
	}
	slices.Sort(p.reachable)
	for port, addr := range loopback {
		if !reachable[port] {
			p.loopback[port] = addr
		}
	}
	return p
}

// better reports whether a is a better loopback address to relay to than
// b: 127.0.0.1 first, then IPv4, then ::1.
func better(a, b netip.Addr) bool {
	rank := func(x netip.Addr) int {
		switch {
		case x == netip.AddrFrom4([4]byte{127, 0, 0, 1}):
			return 0
		case x.Is4():
			return 1
		}
		return 2
	}
	return rank(a) < rank(b)
}

// portsReport merges the reachable and the relayed ports into what a
// ports event carries: sorted, at most protocol.MaxPorts.
func portsReport(reachable []uint16, relayed map[uint16]bool) (ports []protocol.Port, truncated bool) {
	for _, p := range reachable {
		ports = append(ports, protocol.Port{Port: p})
	}
	for p := range relayed {
		ports = append(ports, protocol.Port{Port: p, Loopback: true})
	}
	slices.SortFunc(ports, func(a, b protocol.Port) int { return int(a.Port) - int(b.Port) })
	if len(ports) > protocol.MaxPorts {
		return ports[:protocol.MaxPorts], true
	}
	return ports, false
}

// socketTables reads the kernel's TCP socket tables.
type socketTables struct {
	procRoot string
	buf      []byte
}

// listeners returns the LISTEN sockets of both tables. A missing table
// (a kernel without IPv6) is empty; the error says a table could not be
// read at all.
func (st *socketTables) listeners() ([]listener, error) {
	var out []listener
	var errs []error
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := st.read(filepath.Join(st.procRoot, "net", name))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		out = parseSocketTable(data, out)
	}
	return out, errors.Join(errs...)
}

// read returns up to maxSocketTable bytes of path, into a buffer reused
// from one poll to the next; a line cut by the bound is dropped.
func (st *socketTables) read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.buf == nil {
		st.buf = make([]byte, 64<<10)
	}
	n := 0
	for {
		if n == len(st.buf) {
			if len(st.buf) >= maxSocketTable {
				// Cut: keep whole lines only.
				if i := bytes.LastIndexByte(st.buf[:n], '\n'); i >= 0 {
					n = i + 1
				}
				return st.buf[:n], nil
			}
			st.buf = append(st.buf, make([]byte, min(len(st.buf), maxSocketTable-len(st.buf)))...)
		}
		m, err := f.Read(st.buf[n:])
		n += m
		if err == io.EOF {
			return st.buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// watchPorts reports the listening ports and keeps the relays in step
// with them until the session ends.
func (s *session) watchPorts(guest netip.Addr, interval time.Duration) {
	r := newRelays(s.life, guest, s.log)
	defer r.close()
	tables := &socketTables{procRoot: s.cfg.ProcRoot}
	t := time.NewTicker(interval)
	defer t.Stop()
	var (
		sent          bool
		lastPorts     []protocol.Port
		lastTruncated bool
		lastErr       string
	)
	for {
		ls, err := tables.listeners()
		if err != nil && err.Error() != lastErr {
			s.log.Warn("cannot read the socket tables; ports may be missed", "err", err)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		plan := planPorts(ls, guest, func(l listener) bool { return r.owns(l.addr, l.port) })
		relayed := r.sync(plan.loopback)
		ports, truncated := portsReport(plan.reachable, relayed)
		if !sent || truncated != lastTruncated || !slices.Equal(ports, lastPorts) {
			if !s.emit(protocol.Event{Ev: protocol.EvPorts, Ports: ports, Truncated: truncated}) {
				return
			}
			sent, lastPorts, lastTruncated = true, ports, truncated
		}
		select {
		case <-s.life.Done():
			return
		case <-t.C:
		}
	}
}
