package image

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"sandbar/guest/image/initramfs"
)

// compressionMagic is every compression the kernel's boot wrappers use,
// by the magic its stream starts with.
func compressionMagic() map[string][]byte {
	return map[string][]byte{
		"gzip":  {0x1f, 0x8b},
		"xz":    {0xfd, '7', 'z', 'X', 'Z', 0x00},
		"zstd":  {0x28, 0xb5, 0x2f, 0xfd},
		"lz4":   {0x02, 0x21, 0x4c, 0x18},
		"bzip2": []byte("BZh"),
		"lzma":  {0x5d, 0x00, 0x00},
		"lzo":   {0x89, 'L', 'Z', 'O'},
	}
}

// checkKernel checks that the kernel file is what the hypervisors
// load as is: vm/vz and vm/qemu both hand the image's kernel file to the
// hypervisor unchanged. On arm64 that is the raw Image, the only kernel
// VZLinuxBootLoader boots there (it has no decompressor). On amd64 it is
// the ELF vmlinux with a PVH entry that QEMU's microvm boots; vz on an
// Intel Mac is handed the same file, and that Apple's loader takes an ELF
// vmlinux there rather than a bzImage only a Mac can show.
func checkKernel(arch string, b []byte) problems {
	var p problems
	for name, magic := range compressionMagic() {
		if bytes.HasPrefix(b, magic) {
			p.add("kernel starts with %s magic % x: the hypervisor needs it uncompressed", name, magic)
		}
	}
	switch arch {
	case "arm64":
		// Documentation/arch/arm64/booting.rst: the 64-byte header has
		// the magic at 0x38; an EFI zboot image instead says "zimg" at 4.
		if len(b) < 0x40 || string(b[0x38:0x3c]) != "ARM\x64" {
			p.add("kernel has no arm64 Image magic \"ARM\\x64\" at 0x38 (starts % x): Virtualization.framework boots only a raw Image", b[:min(len(b), 0x40)])
		}
		if len(b) >= 8 && string(b[4:8]) == "zimg" {
			p.add("kernel is an EFI zboot image (compressed): Virtualization.framework boots only a raw Image")
		}
		if len(b) >= 0x40 && binary.LittleEndian.Uint64(b[0x18:])&1 != 0 {
			p.add("arm64 Image header says big-endian: Virtualization.framework runs little-endian guests")
		}
	case "amd64":
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			p.add("amd64 kernel is not an ELF vmlinux: %v", err)
			break
		}
		defer f.Close()
		if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
			p.add("amd64 kernel is %v %v, want ELFCLASS64 EM_X86_64", f.Class, f.Machine)
		}
		if !hasPVHNote(f) {
			p.add("amd64 vmlinux has no PVH entry note (Xen note 18): QEMU microvm cannot boot it")
		}
	default:
		p.add("no kernel check for %s", arch)
	}
	return p
}

// hasPVHNote reports whether f has XEN_ELFNOTE_PHYS32_ENTRY in a note.
func hasPVHNote(f *elf.File) bool {
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return false
		}
		for len(b) >= 12 {
			nsz, dsz, typ := f.ByteOrder.Uint32(b), f.ByteOrder.Uint32(b[4:]), f.ByteOrder.Uint32(b[8:])
			name := b[12:min(len(b), 12+int(nsz))]
			if typ == 18 && string(bytes.TrimRight(name, "\x00")) == "Xen" {
				return true
			}
			next := 12 + (int(nsz)+3)&^3 + (int(dsz)+3)&^3
			if next > len(b) || next <= 12 {
				break
			}
			b = b[next:]
		}
	}
	return false
}

// elfMachine is the ELF machine of each guest architecture.
func elfMachine(arch string) elf.Machine {
	return map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
}

// checkInit checks /init: a static executable for the guest's machine,
// which the kernel runs with nothing else in the initramfs to load it.
func checkInit(arch string, data []byte) problems {
	var p problems
	if data == nil {
		p.add("the initramfs has no /init")
		return p
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		p.add("/init is not an ELF executable: %v", err)
		return p
	}
	defer f.Close()
	if f.Machine != elfMachine(arch) || f.Class != elf.ELFCLASS64 {
		p.add("/init is %v %v, want ELFCLASS64 %v", f.Class, f.Machine, elfMachine(arch))
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		p.add("/init is %v, not an executable", f.Type)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			p.add("/init asks for a program interpreter (PT_INTERP): PID 1 must be static, the initramfs has no ld.so")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		p.add("/init needs shared libraries %v (%v): PID 1 must be static", libs, err)
	}
	return p
}

// checkModules checks every module in the initramfs: it is there, it is
// for this kernel and machine, and each module its .modinfo depends on is
// there too and listed before it for sandbar-init. modpost names only
// modules in depends=, never the kernel proper, so a dependency that is
// not in the initramfs can never be loaded.
func checkModules(arch string, b *bootFiles) problems {
	var p problems
	if len(b.modules) == 0 {
		p.add("the initramfs lists no modules")
	}
	for _, name := range slices.Sorted(maps.Keys(b.modules)) {
		file := b.modules[name]
		data, ok := b.files[file]
		if !ok {
			p.add("module %s is listed in /%s but /%s is not in the initramfs", name, initramfs.ModulesList, file)
			continue
		}
		info, machine, err := modinfo(data)
		if err != nil {
			p.add("module %s: %v", name, err)
			continue
		}
		if machine != elfMachine(arch) {
			p.add("module %s is for %v, want %v", name, machine, elfMachine(arch))
		}
		if v := info["vermagic"]; len(v) != 1 || !strings.HasPrefix(v[0], b.release+" ") {
			p.add("module %s has vermagic %q, not for kernel %s: the kernel refuses it", name, v, b.release)
		}
		for _, dep := range info["depends"] {
			for _, d := range strings.Split(dep, ",") {
				d = strings.ReplaceAll(strings.TrimSpace(d), "-", "_")
				switch _, ok := b.modules[d]; {
				case d == "":
				case !ok:
					p.add("module %s needs module %s, which is not in the initramfs: %s cannot load", name, d, name)
				case !slices.Contains(b.deps[name], d):
					p.add("module %s needs %s, but /%s does not list it for %s: sandbar-init may load %s first", name, d, initramfs.ModulesList, name, name)
				}
			}
		}
	}
	return p
}

// checkDevice checks that the guest has a driver for both sides of d:
// its PCI function (vzTransport) and its virtio device, each built in or
// in the initramfs where sandbar-init's loader picks it for the device.
func checkDevice(b *bootFiles, d vzDevice) problems {
	// A virtio 1.x PCI function is vendor 0x1af4, device 0x1040 + its
	// virtio ID; the drivers' patterns look at no other field.
	pci := fmt.Sprintf("pci:v00001AF4d%08Xsv00001AF4sd%08Xbc00sc00i00", 0x1040+d.virtioID, 0x40+d.virtioID)
	return append(checkDriver(b, d.device, vzTransport, pci), checkDriver(b, d.device, d, virtioModalias(d.virtioID))...)
}

// virtioModalias is what a virtio device with this ID says on the virtio
// bus; the drivers' patterns match any vendor.
func virtioModalias(id uint32) string { return fmt.Sprintf("virtio:d%08Xv00001AF4", id) }

// checkDriver checks that drv is built in, or is a module of the
// initramfs that sandbar-init loads for a device with this modalias.
func checkDriver(b *bootFiles, device string, drv vzDevice, modalias string) problems {
	var p problems
	pending := ""
	if why, ok := pendingDrivers[drv.driver]; ok {
		pending = " [known gap, " + why + "]"
	}
	switch b.config[drv.kconfig] {
	case "y":
		return nil
	case "m":
	default:
		p.add("%s: kernel %s is built without its driver %s (CONFIG_%s is %q)", device, b.release, drv.driver, drv.kconfig, b.config[drv.kconfig])
		return p
	}
	if _, ok := b.modules[drv.driver]; !ok {
		p.add("%s: its driver %s is a module of kernel %s (CONFIG_%s=m) and is not in the initramfs%s", device, drv.driver, b.release, drv.kconfig, pending)
		return p
	}
	if got := b.loadedFor(modalias); !slices.Contains(got, drv.driver) {
		p.add("%s: %s is in the initramfs, but its alias list maps the device (%s) to %v, so sandbar-init never loads it%s", device, drv.driver, modalias, got, pending)
	}
	return p
}

// checkConsoleDriver says how hvc0 comes up. Built in, it is there when
// the kernel opens /dev/console for PID 1, before /init runs. Debian
// builds virtio_console as a module, and then the check of the console
// row of vzDevices is the artifact's half: it is in the initramfs, and
// sandbar-init's loader picks it for the console device. The other half,
// that PID 1 then opens the console again (the kernel's open found no
// hvc0), is sandbar-init's code, which no file of the image shows; a
// vz-shaped boot under QEMU (issue 14) shows it.
func checkConsoleDriver(t *testing.T, b *bootFiles) {
	t.Helper()
	for _, d := range vzDevices() {
		if d.virtioID != vzConsoleID {
			continue
		}
		if v := b.config[d.kconfig]; v != "y" {
			t.Logf("hvc0: %s is not built in (CONFIG_%s=%s): the kernel opens /dev/console for PID 1 before any module loads, so PID 1 must open it again after loading %s", d.driver, d.kconfig, v, d.driver)
		}
		return
	}
	t.Errorf("vzDevices has no row for the console (virtio ID %d), the device of every vz boot's console=hvc0", vzConsoleID)
}

// TestCrossBuildChecks shows that the checks of TestCrossBuildBootFiles
// find what they look for, on made-up files.
func TestCrossBuildChecks(t *testing.T) {
	image := make([]byte, 0x40)
	copy(image, "MZ")
	copy(image[0x38:], "ARM\x64")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(image)
	zw.Close()
	zboot := slices.Clone(image)
	copy(zboot[4:], "zimg")
	copy(zboot[0x38:], "\x00\x00\x00\x00")

	console := vzDevices()[4]
	rng := vzDevices()[5]
	if console.driver != "virtio_console" || rng.driver != "virtio_rng" {
		t.Fatalf("the test's rows moved: %v, %v", console, rng)
	}
	withModules := func(config map[string]string, aliases [][2]string, modules ...string) *bootFiles {
		b := &bootFiles{release: "6.1.0-1-arm64", config: config, modules: map[string]string{}, aliases: aliases}
		for _, m := range modules {
			b.modules[m] = "lib/modules/6.1.0-1-arm64/" + m + ".ko"
		}
		return b
	}
	pciAlias := [2]string{"pci:v00001AF4d*sv*sd*bc*sc*i*", "virtio_pci"}
	consoleAlias := [2]string{"virtio:d00000003v*", "virtio_console"}
	modular := map[string]string{"VIRTIO_PCI": "m", "VIRTIO_CONSOLE": "m", "HW_RANDOM_VIRTIO": "m"}

	tests := []struct {
		name string
		got  problems
		want []string // a part of each problem, in order; none for no problem
	}{
		{"raw arm64 Image", checkKernel("arm64", image), nil},
		{"gzip Image", checkKernel("arm64", gz.Bytes()), []string{"gzip magic", "no arm64 Image magic"}},
		{"EFI zboot", checkKernel("arm64", zboot), []string{"no arm64 Image magic", "zboot"}},
		{"Image as amd64 kernel", checkKernel("amd64", image), []string{"not an ELF vmlinux"}},
		{"static arm64 init", checkInit("arm64", fakeELF(elf.EM_AARCH64, false)), nil},
		{"dynamic arm64 init", checkInit("arm64", fakeELF(elf.EM_AARCH64, true)), []string{"PT_INTERP"}},
		{"amd64 init in an arm64 image", checkInit("arm64", fakeELF(elf.EM_X86_64, false)), []string{"want ELFCLASS64 EM_AARCH64"}},
		{"no init", checkInit("arm64", nil), []string{"no /init"}},
		{"console driver built in", checkDevice(withModules(map[string]string{"VIRTIO_PCI": "y", "VIRTIO_CONSOLE": "y"}, nil), console), nil},
		{"console module loaded for the device", checkDevice(withModules(modular, [][2]string{pciAlias, consoleAlias}, "virtio_pci", "virtio_console"), console), nil},
		{"no alias list: every module loads", checkDevice(withModules(modular, nil, "virtio_pci", "virtio_console"), console), nil},
		{"console module missing", checkDevice(withModules(modular, [][2]string{pciAlias}, "virtio_pci"), console), []string{"virtio_console is a module of kernel 6.1.0-1-arm64 (CONFIG_VIRTIO_CONSOLE=m) and is not in the initramfs"}},
		{"console module without its alias", checkDevice(withModules(modular, [][2]string{pciAlias}, "virtio_pci", "virtio_console"), console), []string{"sandbar-init never loads it"}},
		{"no transport", checkDevice(withModules(modular, [][2]string{consoleAlias}, "virtio_console"), console), []string{"virtio_pci is a module"}},
		{"driver not built at all", checkDevice(withModules(map[string]string{"VIRTIO_PCI": "y"}, nil), console), []string{"built without its driver virtio_console"}},
		{"known gap says so", checkDevice(withModules(modular, [][2]string{pciAlias}, "virtio_pci"), rng), []string{"[known gap, issue 14 item 7"}},
	}
	for _, tt := range tests {
		if len(tt.got) != len(tt.want) {
			t.Errorf("%s: found %q, want problems containing %q", tt.name, tt.got, tt.want)
			continue
		}
		for i := range tt.want {
			if !strings.Contains(tt.got[i], tt.want[i]) {
				t.Errorf("%s: problem %q does not say %q", tt.name, tt.got[i], tt.want[i])
			}
		}
	}
}

// fakeELF is the headers of a 64-bit little-endian executable for
// machine, with a PT_INTERP program header when dynamic.
func fakeELF(machine elf.Machine, dynamic bool) []byte {
	var b bytes.Buffer
	phnum := 1
	if dynamic {
		phnum = 2
	}
	hdr := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(phnum)}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	binary.Write(&b, binary.LittleEndian, hdr)
	binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X)})
	if dynamic {
		binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R)})
	}
	return b.Bytes()
}
