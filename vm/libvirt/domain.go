package libvirt

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"sandbar/vm"
)

// MetadataNS is the namespace of Sandbar's metadata in a domain's XML.
const MetadataNS = "https://sandbar.dev/libvirt/1"

// ChannelName is the virtio-serial port the guest supervisor looks for.
const ChannelName = "org.sandbar.0"

// plan is a domain as Boot decided it: pure data, so the translation from
// a Spec is tested without a host.
type plan struct {
	Name    string
	KVM     bool
	TSCkHz  int
	Kernel  string // paths on the host
	Initrd  string
	Disks   []planDisk
	Channel string // unix socket on the host
	Console string // unix socket on the host; "" for none
	NICPort int    // the port on the host's loopback QEMU connects the NIC to; 0 for none
	NICMAC  string
	NICMTU  int
	Owner   string
	Session string
}

type planDisk struct {
	Path     string
	Format   string // raw or qcow2
	ReadOnly bool
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// cmdline is the guest kernel's arguments on this host: the Spec's and
// the ones vm/qemu adds for the same reasons (the console, no crypto
// self-tests, no Spectre mitigations and a fixed TSC rate under
// emulation).
func (p plan) cmdline(spec vm.Spec) string {
	args := append([]string{"console=ttyS0", "cryptomgr.notests"}, spec.CommandLine...)
	if !p.KVM {
		args = append(args, "mitigations=off")
		if p.TSCkHz > 0 {
			args = append(args, "tsc_early_khz="+strconv.Itoa(p.TSCkHz))
		}
	}
	return strings.Join(args, " ")
}

// domainXML renders the transient domain. Machine "pc" with virtio over
// PCI: libvirt does not drive QEMU's microvm.
func (p plan) domainXML(spec vm.Spec, withMTU bool) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	typ := "qemu"
	if p.KVM {
		typ = "kvm"
	}
	w("<domain type='%s'>\n", typ)
	w("  <name>%s</name>\n", esc(p.Name))
	w("  <metadata>\n    <sandbar:vm xmlns:sandbar='%s'>\n", MetadataNS)
	w("      <sandbar:name>%s</sandbar:name>\n      <sandbar:session>%s</sandbar:session>\n      <sandbar:owner>%s</sandbar:owner>\n", esc(spec.Name), esc(p.Session), esc(p.Owner))
	w("    </sandbar:vm>\n  </metadata>\n")
	w("  <memory unit='KiB'>%d</memory>\n", spec.Memory>>10)
	w("  <vcpu>%d</vcpu>\n", spec.CPUs)
	w("  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n")
	w("    <kernel>%s</kernel>\n    <initrd>%s</initrd>\n    <cmdline>%s</cmdline>\n  </os>\n", esc(p.Kernel), esc(p.Initrd), esc(p.cmdline(spec)))
	w("  <features><acpi/></features>\n")
	if p.KVM {
		w("  <cpu mode='host-passthrough' check='none'/>\n")
	} else {
		// As vm/qemu: without ERMS the guest copies memory in 8-byte
		// moves, which emulation runs far faster than "rep movsb".
		w("  <cpu mode='maximum' check='none'>\n    <feature policy='disable' name='erms'/>\n  </cpu>\n")
	}
	w("  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>destroy</on_reboot>\n  <on_crash>destroy</on_crash>\n")
	w("  <devices>\n")
	for i, d := range p.Disks {
		w("    <disk type='file' device='disk'>\n      <driver name='qemu' type='%s' discard='unmap'/>\n", d.Format)
		w("      <source file='%s'/>\n      <target dev='%s' bus='virtio'/>\n", esc(d.Path), vm.DiskName(i))
		if d.ReadOnly {
			w("      <readonly/>\n")
		}
		w("    </disk>\n")
	}
	w("    <controller type='usb' model='none'/>\n")
	if p.Console != "" {
		w("    <serial type='unix'>\n      <source mode='bind' path='%s'/>\n      <target port='0'/>\n    </serial>\n", esc(p.Console))
	}
	w("    <channel type='unix'>\n      <source mode='bind' path='%s'/>\n      <target type='virtio' name='%s'/>\n    </channel>\n", esc(p.Channel), ChannelName)
	if p.NICPort != 0 {
		w("    <interface type='client'>\n      <mac address='%s'/>\n      <source address='127.0.0.1' port='%d'/>\n      <model type='virtio'/>\n", esc(p.NICMAC), p.NICPort)
		if withMTU && p.NICMTU > 0 {
			w("      <mtu size='%d'/>\n", p.NICMTU)
		}
		w("    </interface>\n")
	}
	w("    <memballoon model='none'/>\n")
	w("  </devices>\n</domain>\n")
	return b.String()
}
