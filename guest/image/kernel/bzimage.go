package kernel

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

// xenElfnotePhys32Entry is XEN_ELFNOTE_PHYS32_ENTRY: the 32-bit PVH entry
// point that QEMU uses to boot an ELF vmlinux directly (-M microvm).
const xenElfnotePhys32Entry = 18

// ExtractVmlinux returns the ELF vmlinux inside an x86-64 bzImage (Debian's
// vmlinuz). It checks that the result is an x86-64 ELF with a PVH entry
// note, because QEMU's microvm boots nothing else.
func ExtractVmlinux(bzImage []byte) ([]byte, error) {
	payload, err := bzImagePayload(bzImage)
	if err != nil {
		return nil, err
	}
	c, ok := detectCompression(payload)
	if !ok {
		return nil, fmt.Errorf("extract vmlinux: unknown compression (magic % x): the bzImage payload is neither gzip, xz, zstd, lzma, lz4, bzip2 nor lzo", payload[:min(len(payload), 6)])
	}
	vmlinux, err := decompress(c, payload)
	if err != nil {
		return nil, fmt.Errorf("extract vmlinux: decompress %s payload: %w", c, err)
	}
	if err := checkPVH(vmlinux); err != nil {
		return nil, fmt.Errorf("extract vmlinux: %w", err)
	}
	return vmlinux, nil
}

// bzImagePayload returns the compressed kernel from a bzImage, as located by
// its setup header (Documentation/arch/x86/boot.rst).
func bzImagePayload(b []byte) ([]byte, error) {
	if len(b) < 0x250 || string(b[0x202:0x206]) != "HdrS" {
		return nil, errors.New("extract vmlinux: not an x86 bzImage (no \"HdrS\" setup header at 0x202): pass the vmlinuz from an amd64 linux-image package")
	}
	if v := binary.LittleEndian.Uint16(b[0x206:]); v < 0x208 {
		return nil, fmt.Errorf("extract vmlinux: boot protocol %d.%02d has no payload fields (need 2.08 or newer): use a newer kernel", v>>8, v&0xff)
	}
	setupSects := int(b[0x1f1])
	if setupSects == 0 {
		setupSects = 4
	}
	start := (setupSects + 1) * 512
	off := int(binary.LittleEndian.Uint32(b[0x248:]))
	n := int(binary.LittleEndian.Uint32(b[0x24c:]))
	if start+off < start || start+off+n > len(b) || n == 0 {
		return nil, fmt.Errorf("extract vmlinux: payload (offset %d, length %d) lies outside the %d-byte file: the bzImage is truncated or corrupt", start+off, n, len(b))
	}
	return b[start+off : start+off+n], nil
}

// checkPVH verifies that b is an x86-64 ELF carrying the Xen PVH entry note.
func checkPVH(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("decompressed kernel is not ELF: %w", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("vmlinux is %s %s, want ELFCLASS64 EM_X86_64", f.Class, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			return fmt.Errorf("read ELF note segment: %w", err)
		}
		if hasNote(data, f.ByteOrder, "Xen", xenElfnotePhys32Entry) {
			return nil
		}
	}
	return errors.New("vmlinux has no PVH entry (Xen ELF note 18, XEN_ELFNOTE_PHYS32_ENTRY), so QEMU -M microvm cannot boot it: use a kernel built with CONFIG_PVH=y")
}

// hasNote reports whether an ELF note area holds a note named name of type
// typ. Notes are 4-byte aligned in the x86-64 kernel.
func hasNote(data []byte, bo binary.ByteOrder, name string, typ uint32) bool {
	align := func(n uint32) uint32 { return (n + 3) &^ 3 }
	for len(data) >= 12 {
		namesz := bo.Uint32(data[0:])
		descsz := bo.Uint32(data[4:])
		t := bo.Uint32(data[8:])
		rest := data[12:]
		if uint64(align(namesz)) > uint64(len(rest)) {
			return false
		}
		n := string(bytes.TrimRight(rest[:namesz], "\x00"))
		rest = rest[align(namesz):]
		if uint64(align(descsz)) > uint64(len(rest)) {
			if n == name && t == typ && uint64(descsz) <= uint64(len(rest)) {
				return true
			}
			return false
		}
		if n == name && t == typ {
			return true
		}
		data = rest[align(descsz):]
	}
	return false
}
