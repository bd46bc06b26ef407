package vm

import (
	"fmt"
	"strconv"
	"time"
)

// GuestOptions describe the guest as sandbar-init reads it from the kernel
// command line (see guest/cmd/sandbar-init).
type GuestOptions struct {
	// Root, Agent, Scratch and Workspace are indexes into Spec.Disks, or
	// -1 for none. Workspace is the read-only base disk of the session's
	// clone, which the guest mounts at /workspace under a layer on Scratch.
	Root, Agent, Scratch, Workspace int
	// Tools is the index of Sandbar's own root disk when Root is another
	// image's (a project's environment): the guest mounts it read-only at
	// /opt/sandbar/root and runs Sandbar's own tools (git for saves,
	// changes and diffs; mkfs for the scratch disk) from it. 0 means
	// none: index 0 is always the root itself.
	Tools int
	// Env is the index of a prepared environment's read-only disk (see
	// guest/cmd/sandbar-init/prepared.go): its layers go between the
	// root (and the workspace's clone) and the session's own. 0: none.
	Env int
	// Capture is the index of the blank disk a capture machine fills
	// from the scratch disk (Scratch) of a machine that prepared an
	// environment; such a machine runs nothing else. 0: none.
	Capture int
	// Share is how the workspace share is mounted (ShareNone: there is
	// none); "" writes no sandbar.share.
	Share ShareKind
	// Net is "none", "dhcp" or "static:<ip>/<prefix>,<gateway>,<dns>".
	Net string
	// Channel is how the guest supervisor reaches the host; "" is
	// ChannelAuto.
	Channel Channel
	Time    time.Time
}

// GuestArgs renders the hypervisor-independent kernel arguments.
func GuestArgs(o GuestOptions) []string {
	args := []string{"panic=-1", "quiet", "loglevel=3"}
	disk := func(key string, i int) {
		if i >= 0 {
			args = append(args, fmt.Sprintf("sandbar.%s=/dev/%s", key, DiskName(i)))
		}
	}
	disk("root", o.Root)
	disk("agent", o.Agent)
	disk("scratch", o.Scratch)
	disk("workspace", o.Workspace)
	if o.Tools > 0 {
		disk("tools", o.Tools)
	}
	if o.Env > 0 {
		disk("env", o.Env)
	}
	if o.Capture > 0 {
		disk("capture", o.Capture)
	}
	if o.Share != "" {
		args = append(args, "sandbar.share="+string(o.Share))
	}
	if o.Net != "" {
		args = append(args, "sandbar.net="+o.Net)
	}
	if o.Channel != "" && o.Channel != ChannelAuto {
		args = append(args, "sandbar.channel="+string(o.Channel))
	}
	if !o.Time.IsZero() {
		args = append(args, "sandbar.time="+strconv.FormatInt(o.Time.Unix(), 10))
	}
	return args
}
