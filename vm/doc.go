// Package vm is the contract between Sandbar and a hypervisor: a Spec says
// what to boot, a Hypervisor boots it, a Machine is the running VM.
//
// Spec is pure data (no cgo, no OS imports), so it can be built, validated
// and tested anywhere; the backends (vm/qemu on Linux and on a Mac with
// QEMU, vm/vz on macOS) only translate it. What every backend does is the
// Hypervisor interface, what it offers guests is its Info, and what only
// some backends do is an optional capability declared here
// (OrphanReaper), which each backend that has it asserts at compile time.
// Errors are typed (ErrUnavailable, ErrInvalidSpec, ...) for errors.Is.
//
// It is not a session manager and not the guest protocol: it knows
// nothing of sessions, git or the UI, and it never reads or writes what
// travels on Machine.Conn (that is app/sandbox's, which speaks
// guest/protocol). Nothing under vm imports guest/protocol but the
// vmtest helper, which runs the real guest supervisor.
package vm
