//go:build linux

// Command sandbar-init is PID 1 of a Sandbar guest. It mounts the kernel
// filesystems, loads the modules listed in the initramfs, assembles the
// root (the read-only image disk under a writable overlay on the scratch
// disk), switches to it, mounts the workspace share, brings up the network
// and the clock, then runs the guest supervisor as a child process and
// reaps every process until the supervisor ends, when it powers off.
//
// It is deliberately small, and it is not the supervisor: everything a
// session does lives in guest/supervisor, ordinary testable Go that this
// binary only runs, in its child process. PID 1 never
// exits; on any failure it prints "sandbar-init: <what>: <err>" to the
// console and powers the machine off, so a broken guest never hangs the
// host waiting for it.
//
// The host drives it through the kernel command line (see parseCmdline):
// sandbar.root, sandbar.agent, sandbar.scratch, sandbar.workspace,
// sandbar.tools (Sandbar's own root when sandbar.root is another image's:
// mounted read-only at /opt/sandbar/root for Sandbar's tools, see
// tools.go), sandbar.share, sandbar.net
// (none, dhcp or static:<ip>/<prefix>,<gateway>,<dns>[,mtu=<n>]),
// sandbar.channel (auto, serial or vsock: how the supervisor reaches the
// host), sandbar.time and sandbar.debug. A network that does not come up
// is the exception to powering off on failure: the guest boots without it
// and the supervisor's system:ready says why.
package main

import (
	"fmt"
	"os"
)

// version is printed by --version; the build may set it with -ldflags -X.
var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "supervise":
			os.Exit(supervise())
		case "--version", "version":
			fmt.Println("sandbar-init", version)
			return
		}
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "sandbar-init: this is the guest VM's init and must run as PID 1; `sandbar-init --version` prints its version")
		os.Exit(2)
	}
	runInit()
}
