package session

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"net"
	"testing"
)

// A session's MAC is derived from its id: a unicast, locally administered
// Ethernet address (one Virtualization.framework and QEMU accept and no
// vendor's card has), the same on every boot of the session, so that a
// DHCP server's lease, keyed by the MAC, is the session's own for its
// whole life.
func TestSessionMACProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 14))
	ids := []string{"", "a", "0123456789", "ffffffffff", "sandbar-session-ü", string(bytes.Repeat([]byte{0xff}, 300))}
	for range 5000 {
		b := make([]byte, 5) // as newID makes them
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		ids = append(ids, hex.EncodeToString(b))
	}
	for _, id := range ids {
		mac := sessionMAC(id)
		if len(mac) != 6 {
			t.Fatalf("sessionMAC(%q) = %v: not 6 bytes", id, mac)
		}
		if mac[0]&1 != 0 {
			t.Fatalf("sessionMAC(%q) = %v is multicast", id, mac)
		}
		if mac[0]&2 == 0 {
			t.Fatalf("sessionMAC(%q) = %v is not locally administered", id, mac)
		}
		if again := sessionMAC(id); !bytes.Equal(again, mac) {
			t.Fatalf("sessionMAC(%q) is %v, then %v: not stable", id, mac, again)
		}
		if parsed, err := net.ParseMAC(mac.String()); err != nil || !bytes.Equal(parsed, mac) {
			t.Fatalf("sessionMAC(%q) = %v does not survive its text form: %v", id, mac, err)
		}
	}
	if bytes.Equal(sessionMAC("0123456789"), sessionMAC("0123456788")) {
		t.Error("two session ids a digit apart share a MAC")
	}
}
