package netstack

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsTTL is how long the guest may cache an answer. A name keeps its
// address for the session (unless maxNames newer ones push it out), so
// the TTL only bounds how stale a forgotten one can get.
const dnsTTL = 60

// answerDNS answers one DNS query from the guest without asking anyone:
// an A question gets the name's address in NamePrefix (see names), a PTR
// question for such an address gets the name back, everything else an
// empty answer. It returns nil for input that is not a query worth a
// reply.
func (n *Network) answerDNS(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil
	}
	qs, err := p.AllQuestions()
	if err != nil {
		return nil
	}
	reply := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	var answers []dnsmessage.Resource
	switch {
	case h.OpCode != 0:
		reply.RCode = dnsmessage.RCodeNotImplemented
	case len(qs) != 1 || qs[0].Class != dnsmessage.ClassINET:
		reply.RCode = dnsmessage.RCodeFormatError
	default:
		q := qs[0]
		name, ok := canonicalName(q.Name.String())
		if !ok {
			reply.RCode = dnsmessage.RCodeNameError
			break
		}
		switch q.Type {
		case dnsmessage.TypeA:
			// localhost is the guest's own loopback (RFC 6761) and takes
			// no address of NamePrefix: one that stood for it would let
			// the guest connect to "localhost" by name, which the host
			// resolves to its own loopback.
			a := netip.AddrFrom4([4]byte{127, 0, 0, 1})
			if name != "localhost" && !strings.HasSuffix(name, ".localhost") {
				a = n.names.addr(name)
			}
			answers = append(answers, dnsmessage.Resource{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: dnsTTL},
				Body:   &dnsmessage.AResource{A: a.As4()},
			})
		case dnsmessage.TypePTR:
			if a, ok := reverseAddr(name); ok {
				if target, ok := n.names.name(a); ok {
					t, err := dnsmessage.NewName(target + ".")
					if err == nil {
						answers = append(answers, dnsmessage.Resource{
							Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypePTR, Class: dnsmessage.ClassINET, TTL: dnsTTL},
							Body:   &dnsmessage.PTRResource{PTR: t},
						})
						break
					}
				}
			}
			reply.RCode = dnsmessage.RCodeNameError
		}
		// AAAA and every other type: no records (the guest has IPv4 only).
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), reply)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil
	}
	if len(qs) == 1 {
		if err := b.Question(qs[0]); err != nil {
			return nil
		}
	}
	if err := b.StartAnswers(); err != nil {
		return nil
	}
	for _, a := range answers {
		var err error
		switch body := a.Body.(type) {
		case *dnsmessage.AResource:
			err = b.AResource(a.Header, *body)
		case *dnsmessage.PTRResource:
			err = b.PTRResource(a.Header, *body)
		}
		if err != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// reverseAddr reads an IPv4 in-addr.arpa name.
func reverseAddr(name string) (netip.Addr, bool) {
	rest, ok := strings.CutSuffix(name, ".in-addr.arpa")
	if !ok {
		return netip.Addr{}, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, s := range parts {
		v, err := strconv.ParseUint(s, 10, 8)
		if err != nil {
			return netip.Addr{}, false
		}
		b[3-i] = byte(v)
	}
	return netip.AddrFrom4(b), true
}

// serveDNSPackets answers queries that arrive over UDP until pc closes.
func (n *Network) serveDNSPackets(pc net.PacketConn) {
	buf := make([]byte, 4096)
	for {
		k, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if out := n.answerDNS(buf[:k]); out != nil {
			pc.WriteTo(out, from)
		}
	}
}

// maxDNSConns bounds the guest's concurrent DNS-over-TCP connections.
const maxDNSConns = 16

// serveDNSStream answers queries over TCP (each behind its 16-bit
// length) until ln closes.
func (n *Network) serveDNSStream(ln net.Listener) {
	slots := make(chan struct{}, maxDNSConns)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		n.wg.Go(func() {
			defer func() { <-slots }()
			defer c.Close()
			n.serveDNSConn(c)
		})
	}
}

func (n *Network) serveDNSConn(c net.Conn) {
	var hdr [2]byte
	buf := make([]byte, 1<<16)
	for {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		k := int(binary.BigEndian.Uint16(hdr[:]))
		if _, err := io.ReadFull(c, buf[:k]); err != nil {
			return
		}
		out := n.answerDNS(buf[:k])
		if out == nil {
			return
		}
		msg := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(out)), uint16(len(out)))
		if _, err := c.Write(append(msg, out...)); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				n.log.Debug("dns over tcp", "err", err)
			}
			return
		}
	}
}
