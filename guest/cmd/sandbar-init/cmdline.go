//go:build linux

package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"sandbar/guest/supervisor"
)

// config is what the host asks of the guest on the kernel command line.
// Every key is optional.
type config struct {
	root    string // sandbar.root: read-only root ext4 disk
	agent   string // sandbar.agent: read-only agent ext4 disk, at /opt/agent
	scratch string // sandbar.scratch: writable disk for the overlay's upper layer
	// workspace (sandbar.workspace) is the read-only base disk of the
	// session's clone, mounted at /workspace under a copy-on-write layer
	// kept on the scratch disk.
	workspace string
	// tools (sandbar.tools) is Sandbar's own root disk when root is
	// another image's: mounted read-only at toolsRoot for Sandbar's own
	// tools (mkfs here; git, sh and the rest for the supervisor's saves).
	tools string
	// env (sandbar.env) is a prepared environment's read-only disk: its
	// root/ goes between the image and the session's layer, its
	// workspace/ between the clone and the session's (see prepared.go).
	env string
	// capture (sandbar.capture) is the blank disk a capture fills from
	// the preparing machine's scratch disk; the machine runs nothing
	// else, then powers off.
	capture string
	share   string // sandbar.share: "virtiofs", "9p" or "none" (default)
	net     netConfig
	time    int64 // sandbar.time: unix seconds; 0 when not given
	debug   bool  // sandbar.debug=1
	// trial (sandbar.trial=1) prints trialMarker and powers off at once:
	// the host's KVM trial boot and the boot benchmark's floor.
	trial bool
	// template (sandbar.template=1) stops at the wait point for the
	// host to save the machine there (see template.go).
	template bool
	// channel (sandbar.channel) is how the supervisor reaches the host:
	// "serial", "vsock" or "auto" (the default: it looks).
	channel string
	// console is the device of the last console= ("hvc0" of
	// "console=hvc0", "ttyS0" of "console=ttyS0,115200"), the one
	// /dev/console is; "" when none is named.
	console string

	// modParams holds "module.param=value" words, by normalised module
	// name, for modules loaded by init: the kernel applies those only to
	// built-in code, modprobe applies them to the rest.
	modParams map[string][]string
	// unknown lists sandbar.* keys this init does not know.
	unknown []string
}

// netConfig is sandbar.net.
type netConfig struct {
	mode    string // "none" (default), "dhcp" or "static"
	addr    netip.Prefix
	gateway netip.Addr
	dns     netip.Addr
	// mtu is the interface's MTU (static's mtu=<n>); 0 keeps the
	// driver's. The host's userspace network asks for a large one
	// (65520): under emulation each packet costs, whatever its size.
	mtu int
	// mac is the address the interface takes (a template's go-ahead);
	// nil keeps the device's.
	mac []byte
}

// MTU bounds: IPv4's minimum (RFC 791) and the most the field holds.
const (
	minMTU = 68
	maxMTU = 65535
)

// parseCmdline reads a kernel command line such as /proc/cmdline holds.
func parseCmdline(s string) (config, error) {
	c := config{share: "none", net: netConfig{mode: "none"}, channel: supervisor.ChannelAuto, modParams: map[string][]string{}}
	for _, word := range strings.Fields(s) {
		key, val, _ := strings.Cut(word, "=")
		if key == "console" {
			c.console, _, _ = strings.Cut(val, ",")
			continue
		}
		if !strings.HasPrefix(key, "sandbar.") {
			if mod, param, ok := strings.Cut(key, "."); ok && param != "" && !strings.ContainsAny(mod, "/") {
				mod = strings.ReplaceAll(mod, "-", "_")
				c.modParams[mod] = append(c.modParams[mod], strings.TrimPrefix(word, key[:len(mod)+1]))
			}
			continue
		}
		switch key {
		case "sandbar.root":
			c.root = val
		case "sandbar.agent":
			c.agent = val
		case "sandbar.scratch":
			c.scratch = val
		case "sandbar.workspace":
			c.workspace = val
		case "sandbar.tools":
			c.tools = val
		case "sandbar.env":
			c.env = val
		case "sandbar.capture":
			c.capture = val
		case "sandbar.share":
			switch val {
			case "virtiofs", "9p", "none":
				c.share = val
			default:
				return c, fmt.Errorf("sandbar.share=%q: want virtiofs, 9p or none", val)
			}
		case "sandbar.channel":
			switch val {
			case supervisor.ChannelAuto, supervisor.ChannelSerial, supervisor.ChannelVsock:
				c.channel = val
			default:
				return c, fmt.Errorf("sandbar.channel=%q: want auto, serial or vsock", val)
			}
		case "sandbar.net":
			n, err := parseNet(val)
			if err != nil {
				return c, err
			}
			c.net = n
		case "sandbar.time":
			t, err := strconv.ParseInt(val, 10, 64)
			if err != nil || t <= 0 {
				return c, fmt.Errorf("sandbar.time=%q: want unix seconds", val)
			}
			c.time = t
		case "sandbar.trial":
			c.trial = val == "1" || val == "true" || val == ""
		case "sandbar.template":
			c.template = val == "1"
		case "sandbar.debug":
			c.debug = val == "1" || val == "true" || val == ""
		default:
			c.unknown = append(c.unknown, key)
		}
	}
	for _, dev := range []struct{ key, val string }{{"root", c.root}, {"agent", c.agent}, {"scratch", c.scratch}, {"workspace", c.workspace}, {"tools", c.tools}, {"env", c.env}, {"capture", c.capture}} {
		if dev.val != "" && !strings.HasPrefix(dev.val, "/dev/") {
			return c, fmt.Errorf("sandbar.%s=%q: want a device path under /dev/", dev.key, dev.val)
		}
	}
	return c, nil
}

// parseNet reads "none", "dhcp" or
// "static:<ip>/<prefix>,<gateway>,<dns>[,mtu=<n>]".
func parseNet(v string) (netConfig, error) {
	switch v {
	case "", "none":
		return netConfig{mode: "none"}, nil
	case "dhcp":
		return netConfig{mode: "dhcp"}, nil
	}
	const form = "static:<ip>/<prefix>,<gateway>,<dns>[,mtu=<n>]"
	spec, ok := strings.CutPrefix(v, "static:")
	if !ok {
		return netConfig{}, fmt.Errorf("sandbar.net=%q: want none, dhcp or %s", v, form)
	}
	parts := strings.Split(spec, ",")
	if len(parts) != 3 && len(parts) != 4 {
		return netConfig{}, fmt.Errorf("sandbar.net=%q: want %s", v, form)
	}
	addr, err := netip.ParsePrefix(parts[0])
	if err != nil || !addr.Addr().Is4() {
		return netConfig{}, fmt.Errorf("sandbar.net=%q: address %q is not an IPv4 <ip>/<prefix>", v, parts[0])
	}
	gw, err := netip.ParseAddr(parts[1])
	if err != nil || !gw.Is4() {
		return netConfig{}, fmt.Errorf("sandbar.net=%q: gateway %q is not an IPv4 address", v, parts[1])
	}
	dns, err := netip.ParseAddr(parts[2])
	if err != nil {
		return netConfig{}, fmt.Errorf("sandbar.net=%q: dns %q is not an IP address", v, parts[2])
	}
	n := netConfig{mode: "static", addr: addr, gateway: gw, dns: dns}
	if len(parts) == 4 {
		val, ok := strings.CutPrefix(parts[3], "mtu=")
		if !ok {
			return netConfig{}, fmt.Errorf("sandbar.net=%q: the fourth field %q is not mtu=<n>", v, parts[3])
		}
		mtu, err := strconv.Atoi(val)
		if err != nil || mtu < minMTU || mtu > maxMTU {
			return netConfig{}, fmt.Errorf("sandbar.net=%q: mtu %q is not a number from %d to %d", v, val, minMTU, maxMTU)
		}
		n.mtu = mtu
	}
	return n, nil
}

// filesystems returns the module aliases ("fs-ext4") of the file systems
// the machine mounts as c asks: ext4 for the disks, overlay for the root,
// and the workspace share's.
func (c config) filesystems() []string {
	var out []string
	if c.root != "" || c.agent != "" || c.scratch != "" || c.workspace != "" || c.tools != "" || c.env != "" || c.capture != "" {
		out = append(out, "fs-ext4")
	}
	if c.root != "" || c.workspace != "" {
		out = append(out, "fs-overlay")
	}
	if c.share != "none" {
		out = append(out, "fs-"+c.share)
	}
	return out
}
