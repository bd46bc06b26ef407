package session

import (
	"context"
	"fmt"
	"net"
	"slices"

	"sandbar/app/sandbox"
	"sandbar/app/store"
)

// guestPorts follows the ports the guest listens on (its ports event):
// a new one is published (unless store.SettingPublishPorts is off), one that
// closed is unpublished; ports a person published stay.
func (sn *sessionNet) guestPorts(ports []sandbox.Port) {
	if v, _, _ := sn.r.m.cfg.Store.Setting(context.Background(), store.SettingPublishPorts); v == "off" {
		return
	}
	listening := map[uint16]bool{}
	for _, p := range ports {
		if p.Port != 0 {
			listening[p.Port] = true
		}
	}
	sn.mu.Lock()
	var gone, fresh []uint16
	for g := range sn.ports {
		if !listening[g] {
			gone = append(gone, g)
		}
	}
	for g := range listening {
		_, auto := sn.ports[g]
		_, manual := sn.manual[g]
		if !auto && !manual {
			fresh = append(fresh, g)
		}
	}
	sn.mu.Unlock()
	slices.Sort(fresh)
	for _, g := range gone {
		if sn.unpublish(g) {
			sn.r.systemLine(fmt.Sprintf("ports: guest port %d closed; no longer published", g))
		}
	}
	for _, g := range fresh {
		p, err := sn.publish(g, 0, false)
		if err != nil {
			sn.r.systemLine(fmt.Sprintf("ports: guest port %d could not be published: %v", g, err))
			continue
		}
		sn.r.systemLine(fmt.Sprintf("ports: guest port %d is published at %s (127.0.0.1:%d)", g, p.URL, p.Host))
	}
}

// sessionMAC is a session's stable, locally administered unicast MAC.
func sessionMAC(id string) net.HardwareAddr {
	mac := net.HardwareAddr{0x5a, 0x94, 0xef, 0, 0, 0}
	for i := 0; i < len(id); i++ {
		mac[3+i%3] ^= id[i] * byte(31*(i+1))
	}
	return mac
}
