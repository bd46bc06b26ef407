package qemu

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sandbar/vm"
)

// Files of a template directory.
const (
	templateMeta  = "template.json"
	templateRAM   = "ram"
	templateState = "state"
)

// templateWait bounds the template boot's way to its wait point when ctx
// has no deadline: a whole boot under emulation on a loaded machine.
const templateWait = 3 * time.Minute

// templateMetaV is the template format; a directory of another is
// foreign.
const templateMetaV = 1

// templateInfo is template.json: what the saved guest was booted with,
// which a Spec must match to start from it, and the sizes of its files,
// which a truncated template does not have.
type templateInfo struct {
	Version   int    `json:"version"`
	QEMU      string `json:"qemu"`
	Arch      string `json:"arch"`
	KVM       bool   `json:"kvm"`
	Kernel    string `json:"kernel"`
	Initramfs string `json:"initramfs"`
	CPUs      int    `json:"cpus"`
	Memory    uint64 `json:"memory"`
	// Disks are the read-only flags of the disks, in order: the guest
	// has not opened one (its block driver loads after the go-ahead),
	// so their files may differ, but not their number or kind.
	Disks     []bool     `json:"disks"`
	Network   vm.Network `json:"network"`
	Console   bool       `json:"console"`
	RAMSize   int64      `json:"ram_size"`
	StateSize int64      `json:"state_size"`
}

func (h *Hypervisor) templateInfo(spec vm.Spec) templateInfo {
	// Check first: it resolves the binary's path.
	kvm := h.Check(context.Background()).Accelerated
	h.mu.Lock()
	bin := h.cfg.Binary
	h.mu.Unlock()
	ti := templateInfo{
		Version: templateMetaV, QEMU: bin, Arch: h.arch(), KVM: kvm,
		Kernel: spec.Kernel, Initramfs: spec.Initramfs, CPUs: spec.CPUs, Memory: spec.Memory,
		Network: spec.Network, Console: spec.ConsoleLog != "",
	}
	for _, d := range spec.Disks {
		ti.Disks = append(ti.Disks, d.ReadOnly)
	}
	return ti
}

// mismatch says how a Spec differs from the template's, "" when it does
// not.
func (t templateInfo) mismatch(s templateInfo) string {
	switch {
	case s.CPUs != t.CPUs:
		return fmt.Sprintf("%d vCPUs differ from the template's %d", s.CPUs, t.CPUs)
	case s.Memory != t.Memory:
		return fmt.Sprintf("%d MiB of memory differ from the template's %d MiB", s.Memory/vm.MiB, t.Memory/vm.MiB)
	case s.Network != t.Network:
		return fmt.Sprintf("the network (%s) differs from the template's (%s)", s.Network, t.Network)
	case len(s.Disks) != len(t.Disks):
		return fmt.Sprintf("%d disks differ from the template's %d (a prepared environment or another image's root adds one)", len(s.Disks), len(t.Disks))
	case !slices.Equal(s.Disks, t.Disks):
		return fmt.Sprintf("the disks' read-only flags %v differ from the template's %v", s.Disks, t.Disks)
	case s.Console != t.Console:
		return "the console differs from the template's"
	case s.Kernel != t.Kernel || s.Initramfs != t.Initramfs:
		return "the kernel or initramfs is not the template's image's"
	case s.QEMU != t.QEMU || s.Arch != t.Arch || s.KVM != t.KVM:
		return fmt.Sprintf("the template was saved by %s (%s, KVM %v), not this QEMU", t.QEMU, t.Arch, t.KVM)
	}
	return ""
}

// SaveTemplate implements vm.Templater: spec boots with its RAM in a
// file shared with QEMU (memory-backend-file, share=on), the guest
// reaches sandbar-init's wait point and says so on the channel, and QEMU
// saves its devices' state with x-ignore-shared (the RAM stays in the
// file) and quits. dir is replaced only by a whole template.
func (h *Hypervisor) SaveTemplate(ctx context.Context, spec vm.Spec, dir string) error {
	if h.cfg.Shape == ShapeVZ {
		return fmt.Errorf("templates need Sandbar's own machine (a serial channel), not the vz shape: %w", vm.ErrUnsupported)
	}
	if len(spec.Shares) > 0 {
		return errors.New("template: a VM with shares cannot be a template: its share's daemon keeps state QEMU does not save")
	}
	if !slices.Contains(spec.CommandLine, vm.TemplateArg) {
		return fmt.Errorf("template: the kernel command line lacks %s, so the guest would not wait for its go-ahead", vm.TemplateArg)
	}
	ctx, cancel := withDefaultTimeout(ctx, templateWait)
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".part-")
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	defer os.RemoveAll(tmp) // nothing once renamed
	ram := filepath.Join(tmp, templateRAM)
	spec.Dir = filepath.Join(tmp, "vm")
	if spec.ConsoleLog != "" {
		spec.ConsoleLog = filepath.Join(tmp, "vm", "console.log")
	}
	start := time.Now()
	m, err := h.boot(ctx, spec, bootOpts{memFile: ram, memShared: true, ignoreShared: true})
	if err != nil {
		return fmt.Errorf("template: boot: %w", err)
	}
	defer func() {
		m.Kill()
		<-m.exit.Done()
	}()
	waited := make(chan error, 1)
	go func() { waited <- awaitLine(m.Conn(), vm.TemplateWaiting) }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		err = ctx.Err()
	case <-m.exit.Done():
		err = errors.New("the VM ended")
	}
	if err != nil {
		return fmt.Errorf("template: the guest did not reach its wait point: %v: %s", err, strings.TrimSpace(m.stderr.String()))
	}
	booted := time.Since(start)
	state := filepath.Join(tmp, templateState)
	if err := m.Suspend(ctx, state); err != nil {
		return fmt.Errorf("template: save: %w", err)
	}
	ti := h.templateInfo(spec)
	for _, f := range []struct {
		path string
		size *int64
	}{{ram, &ti.RAMSize}, {state, &ti.StateSize}} {
		fh, err := os.Open(f.path)
		if err != nil {
			return fmt.Errorf("template: %w", err)
		}
		err = fh.Sync()
		fi, serr := fh.Stat()
		fh.Close()
		if err = errors.Join(err, serr); err != nil {
			return fmt.Errorf("template: %w", err)
		}
		*f.size = fi.Size()
	}
	os.RemoveAll(spec.Dir)
	b, _ := json.MarshalIndent(ti, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, templateMeta), b, 0o600); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	// The old template's files stay mapped by the VMs started from it:
	// they are removed, never written (a new template is new files).
	old := dir + ".old"
	os.RemoveAll(old)
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("template: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	os.RemoveAll(old)
	syncDir(filepath.Dir(dir))
	h.log.Info("template saved", "dir", dir, "boot", booted.Round(time.Millisecond), "took", time.Since(start).Round(time.Millisecond), "ram_bytes", ti.RAMSize)
	return nil
}

// awaitLine reads r until a line equal to want, a bounded amount: the
// guest is Sandbar's own here, before anything of a session runs.
func awaitLine(r io.Reader, want string) error {
	br := bufio.NewReaderSize(io.LimitReader(r, 1<<20), 4096)
	for {
		line, err := br.ReadSlice('\n')
		if strings.TrimSpace(string(line)) == want {
			return nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read the channel: %w", err)
		}
	}
}

// readTemplate reads dir's template.json and checks its files, saying in
// words what is wrong with a template that cannot be used.
func readTemplate(dir string) (templateInfo, error) {
	var ti templateInfo
	b, err := os.ReadFile(filepath.Join(dir, templateMeta))
	if errors.Is(err, os.ErrNotExist) {
		return ti, fmt.Errorf("%w in %s", vm.ErrNoTemplate, dir)
	}
	if err != nil {
		return ti, fmt.Errorf("%w: %v", vm.ErrBadState, err)
	}
	if err := json.Unmarshal(b, &ti); err != nil || ti.Version != templateMetaV {
		return ti, fmt.Errorf("%w: %s is not a template of this Sandbar", vm.ErrBadState, dir)
	}
	for _, f := range []struct {
		name string
		size int64
	}{{templateRAM, ti.RAMSize}, {templateState, ti.StateSize}} {
		fi, err := os.Stat(filepath.Join(dir, f.name))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != f.size || f.size == 0 {
			return ti, fmt.Errorf("%w: the template's %s is missing or truncated", vm.ErrBadState, f.name)
		}
	}
	if ti.RAMSize != int64(ti.Memory) {
		return ti, fmt.Errorf("%w: the template's RAM file is %d bytes, not its memory's %d", vm.ErrBadState, ti.RAMSize, ti.Memory)
	}
	return ti, nil
}

// BootFromTemplate implements vm.Templater: QEMU starts with the
// template's RAM file mapped privately (share=off: each VM's writes are
// its own copies, the pages it only reads are shared in the host's page
// cache), loads the devices' state (-incoming, x-ignore-shared), and the
// guest, at its wait point, gets the go-ahead: spec's kernel command
// line, a seed for its RNG, the clock and a new machine-id. Its
// supervisor then says system:ready on Conn as after a boot.
func (h *Hypervisor) BootFromTemplate(ctx context.Context, spec vm.Spec, dir string) (vm.Machine, error) {
	if h.cfg.Shape == ShapeVZ {
		return nil, fmt.Errorf("templates need Sandbar's own machine: %w", vm.ErrUnsupported)
	}
	ti, err := readTemplate(dir)
	if err != nil {
		return nil, err
	}
	if len(spec.Shares) > 0 {
		return nil, &vm.TemplateMismatch{Why: "the VM has a share, which the template has not"}
	}
	if why := ti.mismatch(h.templateInfo(spec)); why != "" {
		return nil, &vm.TemplateMismatch{Why: why}
	}
	seed := make([]byte, 64)
	id := make([]byte, 16)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	m, err := h.boot(ctx, spec, bootOpts{state: filepath.Join(dir, templateState), memFile: filepath.Join(dir, templateRAM), ignoreShared: true})
	if err != nil {
		return nil, err
	}
	g := vm.GoAhead{CommandLine: argOf(m.plan.Args, "-append"), Seed: seed, TimeNS: time.Now().UnixNano(), MachineID: hex.EncodeToString(id)}
	if spec.NIC != nil {
		g.MAC = spec.NIC.MAC.String()
	}
	b, err := json.Marshal(g)
	if err == nil {
		_, err = m.Conn().Write(append(b, '\n'))
	}
	if err != nil {
		m.Kill()
		<-m.exit.Done()
		return nil, fmt.Errorf("hand the go-ahead to the guest: %w", err)
	}
	return m, nil
}

// argOf is the value after the first flag in args, "" when none.
func argOf(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

var _ vm.Templater = (*Hypervisor)(nil)
