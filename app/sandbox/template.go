package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sandbar/guest/image"
	"sandbar/vm"
	"sandbar/vm/caplog"
)

// TemplateDir is where img's template lives: beside its files, one per
// image, replaced whole when the image is.
func TemplateDir(img *image.Image) string { return filepath.Join(img.Dir, "template") }

// TemplateShape is the VM a template is saved as, and the only one that
// starts from it: a session's at the default size (DefaultCPUs,
// DefaultMemory) with a scratch disk, a workspace disk and a NIC. A
// session of another shape boots cold.
func TemplateShape(dir string) Options {
	return Options{
		Name: "sandbar-template", Dir: dir,
		CPUs: DefaultCPUs, Memory: DefaultMemory,
		ScratchSize: vm.MiB, Scratch: filepath.Join(dir, "scratch.img"),
		Workspace: filepath.Join(dir, "workspace.img"),
	}
}

// SaveTemplate boots img once to sandbar-init's wait point in the shape
// TemplateShape says, and saves it into dir (img's is TemplateDir). The
// template's disks and NIC are placeholders: the guest's block and
// network drivers load only after a session's go-ahead, so it never saw
// them.
func SaveTemplate(ctx context.Context, hv vm.Hypervisor, img *image.Image, dir string) error {
	tm, ok := hv.(vm.Templater)
	if !ok {
		return fmt.Errorf("the %s backend cannot save a template: %w", hv.Name(), vm.ErrUnsupported)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	work, err := os.MkdirTemp(filepath.Dir(dir), "template-boot-")
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	defer os.RemoveAll(work)
	o := TemplateShape(work)
	for _, f := range []string{o.Scratch, o.Workspace} {
		if err := os.WriteFile(f, make([]byte, 4096), 0o600); err != nil {
			return fmt.Errorf("template: %w", err)
		}
	}
	host, guest, _, err := NICPair(hv)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	defer host.Close()
	defer guest.Close()
	o.NIC = &vm.NIC{File: guest, MAC: templateMAC, MTU: 1500}
	o.NICArg = "none"
	o.KernelArgs = []string{vm.TemplateArg}
	o.defaults()
	spec, err := SpecFor(img, hv.Info(), o)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	return tm.SaveTemplate(ctx, spec, dir)
}

// templateMAC is the template's NIC's address; the guest's driver never
// reads it (it loads after the go-ahead, from the VM's own device).
var templateMAC = []byte{0x02, 0x53, 0x42, 0x00, 0x00, 0x01}

// bootFromTemplate starts spec from o.Template and waits for its
// system:ready. Where it cannot, it says why in words for the session's
// log ("4 vCPUs differ from the template's 2") with the error.
func bootFromTemplate(ctx context.Context, hv vm.Hypervisor, spec vm.Spec, o Options) (*Sandbox, string, error) {
	tm, ok := hv.(vm.Templater)
	if !ok {
		return nil, "the " + hv.Name() + " backend has no templates", vm.ErrUnsupported
	}
	caplog.Remove(spec.ConsoleLog) // this VM's console only
	start := time.Now()
	m, err := tm.BootFromTemplate(ctx, spec, o.Template)
	var mis *vm.TemplateMismatch
	switch {
	case errors.As(err, &mis):
		return nil, mis.Why, err
	case errors.Is(err, vm.ErrNoTemplate):
		return nil, "there is no template yet", err
	case errors.Is(err, vm.ErrBadState):
		return nil, "the template is damaged: " + err.Error(), err
	case err != nil:
		return nil, "the template did not start: " + err.Error(), err
	}
	sb, err := awaitReady(ctx, m, spec, o, start)
	if err != nil {
		return nil, "the VM started from the template did not get ready: " + err.Error(), err
	}
	sb.FromTemplate = true
	sb.TemplateNote = fmt.Sprintf("started from the template in %s", sb.ReadyAfter.Round(10*time.Millisecond))
	return sb, "", nil
}

// EnsureTemplate saves img's template (TemplateDir) unless it has one.
func EnsureTemplate(ctx context.Context, hv vm.Hypervisor, img *image.Image) error {
	if _, err := os.Stat(filepath.Join(TemplateDir(img), "template.json")); err == nil {
		return nil
	}
	return SaveTemplate(ctx, hv, img, TemplateDir(img))
}
