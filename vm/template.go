package vm

import (
	"context"
	"errors"
)

// Templater is a Hypervisor that can save a guest booted to its wait
// point (sandbar-init's sandbar.template=1: modules loaded, nothing of a
// session's mounted, waiting on the host channel for the session's
// go-ahead) as a template, and start new VMs from that template instead
// of booting them. A backend asserts it at compile time.
type Templater interface {
	// SaveTemplate boots spec (whose CommandLine asks for the wait
	// point, see TemplateArg), waits until the guest says it waits, and
	// saves it into dir, which it creates whole or not at all (a
	// temporary directory beside it, renamed when complete). The VM
	// ends.
	SaveTemplate(ctx context.Context, spec Spec, dir string) error
	// BootFromTemplate starts spec from the template in dir: the guest
	// continues from its wait point and is handed the session's go-ahead
	// (its kernel arguments, fresh entropy, the host's clock, a new
	// machine-id). A template that is missing, truncated or foreign is
	// ErrBadState; a spec whose shape differs from the template's
	// (vCPUs, memory, disks, network) is a *TemplateMismatch. Either way
	// the caller boots spec cold.
	BootFromTemplate(ctx context.Context, spec Spec, dir string) (Machine, error)
}

// TemplateArg is the kernel argument that stops sandbar-init at its wait
// point for a template to be saved there.
const TemplateArg = "sandbar.template=1"

// TemplateMismatch says why a Spec cannot start from a template: the
// words name what differs ("4 vCPUs differ from the template's 2").
type TemplateMismatch struct{ Why string }

func (e *TemplateMismatch) Error() string { return e.Why }

// ErrNoTemplate is wrapped when there is no template to start from.
var ErrNoTemplate = errors.New("no template")

// TemplateWaiting is the line sandbar-init writes on the host channel
// when it has reached its wait point (TemplateArg); the host then saves
// the template.
const TemplateWaiting = "sandbar-init: template waiting"

// GoAhead is the one JSON line the host writes on the channel of a VM
// started from a template, which sandbar-init reads at its wait point
// before it mounts anything. Everything that makes one VM unlike another
// started from the same template is in it.
type GoAhead struct {
	// CommandLine is the kernel command line the VM would have booted
	// with: its disks, network, channel and the rest, which the guest
	// reads in place of the template's /proc/cmdline.
	CommandLine string `json:"cmdline"`
	// Seed is fresh host entropy (64 bytes) the guest adds to its pool
	// and reseeds its RNG with before anything runs.
	Seed []byte `json:"seed"`
	// TimeNS is the host's clock, Unix nanoseconds.
	TimeNS int64 `json:"time_ns"`
	// MachineID is the guest's new /etc/machine-id (32 hex digits).
	MachineID string `json:"machine_id"`
	// MAC is the address the guest's NIC takes, the Spec's NIC's: the
	// device's own is the template's after the load.
	MAC string `json:"mac,omitempty"`
}

// MaxGoAhead bounds the go-ahead line, newline included.
const MaxGoAhead = 64 << 10
