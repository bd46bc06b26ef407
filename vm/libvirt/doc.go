// Package libvirt boots Sandbar guests on another machine's libvirt,
// reached over one SSH connection per VM: the same vm.Hypervisor contract
// as vm/qemu, so sessions, the protocol and saves do not change.
//
// What crosses the connection: the guest image's files and the
// workspace's base disk, uploaded once per content hash and cached on the
// host; the libvirt RPC (go-libvirt over the host's libvirt socket); and,
// back to this machine, the guest's channel (a unix socket on the host,
// which go-libvirt's DomainOpenChannel cannot write to), its console, and
// its NIC's frames (libvirt's <interface type='client'> stream, to a port
// sshd forwards to this machine). So the
// session's egress rules, DNS and credential broker stay in Sandbar's
// netstack here, and no key ever reaches the host.
//
// Each VM is a transient domain started with libvirt's autodestroy: it
// ends when the connection that started it closes, and a guard on the
// host ends it when this machine stops answering (see GuardTimeout).
// Every domain carries Sandbar's metadata (session, owner), so leftovers
// are found from the host's own list.
//
// It is not a placement engine (which host to use is the caller's) and it
// never speaks the guest protocol.
package libvirt
