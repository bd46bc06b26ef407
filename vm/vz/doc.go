// Package vz boots Sandbar guests with Apple's Virtualization.framework
// through github.com/Code-Hex/vz/v3: a Linux boot loader, virtio-blk disks,
// the workspace over virtio-fs, the protocol over vsock port 1024, NAT
// networking, and the guest console written to a file.
//
// It is the macOS backend. The translation of a vm.Spec into a Plan
// (plan.go) is pure Go, compiled and tested on every platform; only the
// darwin files turn a Plan into framework calls and own the running VM.
// The VM belongs to the Sandbar process: the framework runs it in an XPC
// service of its own that ends with this process, so there is no
// hypervisor process to start, track or reap (its Info says so, and it is
// no vm.OrphanReaper). On other platforms New returns a backend whose
// Check says it is unavailable, so callers carry no build tags.
//
// It is not a guest-protocol speaker: the vsock connection is handed over
// as Machine.Conn, and the protocol's lines on it are app/sandbox's. It
// knows nothing of sessions.
package vz
