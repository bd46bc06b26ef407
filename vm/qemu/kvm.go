package qemu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// TrialMarker is what sandbar-init prints when booted with sandbar.trial=1,
// just before it powers off. It is guest/protocol's TrialMarker, written
// out here so that no package of vm imports the guest protocol (a test
// holds the two equal).
const TrialMarker = "sandbar-init: trial ok"

// trialDeadline bounds a KVM trial: a working KVM boots to the marker in a
// fraction of a second; a broken nested KVM errors out or spins forever.
const trialDeadline = 15 * time.Second

type verdict struct {
	Key    string    `json:"key"`
	KVM    bool      `json:"kvm"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// kvmVerdict decides whether guests get KVM. Opening /dev/kvm proves
// nothing (a nested KVM may open and still fail every real boot), so it
// boots the guest kernel once under KVM with a deadline and caches the
// result, keyed by everything that could change it.
func (h *Hypervisor) kvmVerdict(ctx context.Context) (bool, string) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		switch {
		case os.IsNotExist(err):
			return false, "/dev/kvm does not exist (no hardware virtualization here)"
		case os.IsPermission(err):
			return false, "/dev/kvm not accessible: add your user to the kvm group (`sudo usermod -aG kvm $USER`, then log in again)"
		}
		return false, fmt.Sprintf("/dev/kvm cannot be opened: %v", err)
	}
	f.Close()
	if h.cfg.TrialImage == nil {
		return false, "KVM not proven: no guest kernel to try it with"
	}
	kernel, initrd, err := h.cfg.TrialImage()
	if err != nil {
		return false, "KVM not proven yet: " + err.Error()
	}
	key := verdictKey(h.cfg.Binary, kernel)
	cache := filepath.Join(h.cfg.StateDir, "kvm-verdict.json")
	if h.cfg.StateDir != "" {
		if data, err := os.ReadFile(cache); err == nil {
			var v verdict
			if json.Unmarshal(data, &v) == nil && v.Key == key {
				return v.KVM, v.Reason + " (cached " + v.At.Format(time.DateTime) + ")"
			}
		}
	}
	ok, reason := h.trialBoot(ctx, kernel, initrd)
	if h.cfg.StateDir != "" && ctx.Err() == nil {
		data, _ := json.Marshal(verdict{Key: key, KVM: ok, Reason: reason, At: time.Now()})
		tmp := cache + ".tmp"
		if os.MkdirAll(h.cfg.StateDir, 0o755) == nil && os.WriteFile(tmp, data, 0o644) == nil {
			os.Rename(tmp, cache)
		}
	}
	return ok, reason
}

// verdictKey changes when QEMU, the guest kernel or the host kernel do.
func verdictKey(binary, kernel string) string {
	var b strings.Builder
	for _, p := range []string{binary, kernel} {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		b.Write(bytes.TrimSpace(rel))
	}
	return b.String()
}

func (h *Hypervisor) trialBoot(ctx context.Context, kernel, initrd string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, trialDeadline)
	defer cancel()
	machine, console := "microvm,x-option-roms=off", "ttyS0"
	if h.arch() == "arm64" {
		machine, console = "virt,gic-version=max", "ttyAMA0"
	}
	cmd := exec.CommandContext(ctx, h.cfg.Binary, "-M", machine, "-accel", "kvm", "-cpu", "host",
		"-m", "256M", "-smp", "1", "-nodefaults", "-no-user-config", "-no-reboot", "-display", "none",
		"-kernel", kernel, "-initrd", initrd, "-serial", "stdio",
		"-append", "console="+console+" panic=-1 quiet sandbar.trial=1")
	cmd.SysProcAttr = procAttr(true)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if strings.Contains(out.String(), TrialMarker) {
		return true, fmt.Sprintf("trial boot reached the guest init in %d ms", took.Milliseconds())
	}
	if ctx.Err() == context.DeadlineExceeded {
		return false, fmt.Sprintf("KVM is present but a trial boot did not finish in %s (nested KVM that cannot run this guest)", trialDeadline)
	}
	detail := lastLine(out.String())
	if detail == "" && err != nil {
		detail = err.Error()
	}
	return false, "KVM is present but a trial boot failed: " + detail
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
