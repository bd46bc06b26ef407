package kernel

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

// signatureMarker ends a module that carries an appended signature
// (scripts/sign-file): the module's ELF, the PKCS#7 signature, a 12-byte
// struct module_signature whose last 4 bytes are the signature's length
// (big-endian), then this marker.
const signatureMarker = "~Module signature appended~\n"

// StripSignature returns data without its appended signature; data that
// carries none is returned as is.
func StripSignature(data []byte) []byte {
	if !bytes.HasSuffix(data, []byte(signatureMarker)) {
		return data
	}
	end := len(data) - len(signatureMarker)
	const infoSize = 12 // struct module_signature
	if end < infoSize {
		return data
	}
	sigLen := int(binary.BigEndian.Uint32(data[end-4 : end]))
	elfEnd := end - infoSize - sigLen
	if sigLen < 0 || elfEnd < 0 || !bytes.HasPrefix(data, []byte("\x7fELF")) {
		return data
	}
	return data[:elfEnd]
}

// hiddenSection is a section SlimForBoot hides from the loader, and
// whether it is also left out of the module's memory.
type hiddenSection struct {
	name    string
	noAlloc bool
}

// bootHidden are the module sections SlimForBoot hides from the guest
// kernel's loader, and whether each is also left out of the module's
// memory. Each costs load time and serves only tracing and debugging;
// measured on 6.1.0-50 under QEMU TCG, hiding them cut ext4's load from
// about 230 ms to 135 ms and a root-disk boot's eleven modules from about
// 560 ms to 430 ms.
var bootHidden = []hiddenSection{
	// Type information for BPF, parsed and checked at every load.
	{".BTF", false},
	// The ORC unwinder's tables, sorted at every load (ext4 has 14,000
	// entries); without them a stack trace stops at the module's frames.
	{".orc_unwind", true},
	{".orc_unwind_ip", true},
	// Call sites of static calls (mostly tracepoints), each rewritten at
	// load through text_poke; unlisted, a site keeps calling the static
	// call's trampoline, which the kernel keeps up to date, so it calls
	// the same function one jump later.
	{".static_call_sites", false},
	// Trace events, each given a tracefs directory at load, and the enum
	// values their formats print, matched against every trace event in
	// the kernel at load; the tracepoints themselves stay, for BPF.
	{"_ftrace_events", false},
	{"_ftrace_eval_map", false},
}

// SlimForBoot prepares a module for the initramfs, where loading time is
// boot time: it strips the appended signature (StripSignature), on x86-64
// turns the module's ftrace call sites into NOPs (nopFentryCalls), and
// hides from the loader the sections listed in bootHidden by renaming each
// to its name less the first character (".BTF" becomes "BTF"), which the
// loader does not look for, clearing SHF_ALLOC where the data must not be
// kept. The names stay distinct: the loader lists a module's sections by
// name in /sys/module/NAME/sections, and two with one name (the empty
// one, say) make it log a warning with a stack trace at every load.
//
// The guest kernel checks an appended signature at every load but, being
// built without CONFIG_MODULE_SIG_FORCE and booted without Secure Boot
// lockdown, never refuses a module that lacks one: the check only costs a
// SHA-256 of the file and an RSA verification, about a quarter of the load
// time under emulation (a root-disk boot's modules in 460–520 ms instead
// of 670–690 ms). The modules come from a kernel package checked against
// the archive's hashes, and whoever could change the initramfs could
// change the kernel beside it. A kernel that loads one logs "module
// verification failed" once and taints itself 'E'.
//
// data must be a little-endian 64-bit ELF relocatable (amd64 and arm64
// modules are); the result is a copy.
func SlimForBoot(data []byte) ([]byte, error) {
	data = StripSignature(data)
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not an ELF object: %w", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Type != elf.ET_REL {
		return nil, fmt.Errorf("not a little-endian 64-bit relocatable ELF object (%v, %v, %v)", f.Class, f.Data, f.Type)
	}
	out := bytes.Clone(data)
	hide := bootHidden
	if f.Machine == elf.EM_X86_64 {
		done, err := nopFentryCalls(out, f)
		if err != nil {
			return nil, err
		}
		if done {
			hide = append(hide[:len(hide):len(hide)], hiddenSection{mcountSection, false})
		}
	}
	le := binary.LittleEndian
	shoff := le.Uint64(data[0x28:])
	shentsize := uint64(le.Uint16(data[0x3a:]))
	names := map[string]bool{}
	for _, s := range f.Sections {
		names[s.Name] = true
	}
	for i, s := range f.Sections {
		for _, h := range hide {
			if s.Name != h.name {
				continue
			}
			if names[h.name[1:]] {
				return nil, fmt.Errorf("cannot hide section %s: the module has a section %s too", h.name, h.name[1:])
			}
			hdr := shoff + uint64(i)*shentsize
			if hdr+shentsize > uint64(len(out)) || shentsize < 16 {
				return nil, fmt.Errorf("section header %d lies outside the file", i)
			}
			// sh_name is an offset into the section name table, whose
			// strings end in NUL: one more is the same name less its
			// first character.
			le.PutUint32(out[hdr:], le.Uint32(out[hdr:])+1)
			if h.noAlloc {
				le.PutUint64(out[hdr+8:], le.Uint64(out[hdr+8:])&^uint64(elf.SHF_ALLOC))
			}
		}
	}
	return out, nil
}

// mcountSection lists a module's ftrace call sites: the "call __fentry__"
// GCC puts at the start of every function (-pg -mfentry -mrecord-mcount).
const mcountSection = "__mcount_loc"

// nop5 is the 5-byte NOP (nopl 0x0(%rax,%rax,1)) the kernel's ftrace
// writes over a call site it is not tracing (x86's ftrace_nop).
var nop5 = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}

// nopFentryCalls does in out, a copy of f's file, what the guest kernel's
// ftrace would do at every load of the module: it overwrites each call
// site listed in __mcount_loc, a "call __fentry__", with nop5, and makes
// the call's relocation R_X86_64_NONE so the loader leaves the NOP alone.
// Under emulation the kernel's patching, one text_poke and a serializing
// instruction per site, took 35 of ext4's 62 ms load (851 sites; Debian's
// 6.1.0-50, QEMU TCG). The caller then hides __mcount_loc, so the
// module's functions are not offered to ftrace: nothing in the guest
// traces them.
//
// It changes out only if every listed site is such a call with such a
// relocation, and reports whether it did; a module without ftrace call
// sites, or one built another way, is left alone.
func nopFentryCalls(out []byte, f *elf.File) (bool, error) {
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the symbol table: %w", err)
	}
	// f.Symbols leaves out the null symbol: ELF symbol i is syms[i-1].
	sym := func(i uint32) (elf.Symbol, bool) {
		if i == 0 || int(i) > len(syms) {
			return elf.Symbol{}, false
		}
		return syms[i-1], true
	}
	type site struct {
		sec int    // index of the text section
		off uint64 // offset of the call instruction in it
	}
	mcount := f.Section(mcountSection)
	if mcount == nil {
		return false, nil
	}
	// The sites: __mcount_loc holds one address a site, each filled in by
	// a relocation against the text section (or a symbol in it).
	sites := map[site]bool{}
	marks, err := relocations(f, func(t *elf.Section) bool { return t == mcount })
	if err != nil {
		return false, err
	}
	for _, rs := range marks {
		for _, r := range rs.entries {
			y, ok := sym(elf.R_SYM64(r.Info))
			if !ok || elf.R_X86_64(elf.R_TYPE64(r.Info)) != elf.R_X86_64_64 || int(y.Section) >= len(f.Sections) || r.Addend < 0 {
				return false, nil
			}
			sites[site{int(y.Section), y.Value + uint64(r.Addend)}] = true
		}
	}
	if len(sites) == 0 {
		return false, nil
	}
	// The calls: relocations in executable sections against __fentry__
	// whose 4 bytes follow a call opcode at a site.
	type patch struct{ call, rela uint64 } // file offsets: the call, its relocation entry
	var patches []patch
	calls, err := relocations(f, func(t *elf.Section) bool {
		return t.Flags&elf.SHF_EXECINSTR != 0 && t.Type == elf.SHT_PROGBITS
	})
	if err != nil {
		return false, err
	}
	for _, rs := range calls {
		text := f.Sections[rs.target]
		for i, r := range rs.entries {
			y, ok := sym(elf.R_SYM64(r.Info))
			if !ok || y.Name != "__fentry__" {
				continue
			}
			t := elf.R_X86_64(elf.R_TYPE64(r.Info))
			if (t != elf.R_X86_64_PLT32 && t != elf.R_X86_64_PC32) || r.Off == 0 || r.Off+4 > text.Size {
				return false, nil
			}
			call := text.Offset + r.Off - 1
			if !sites[site{rs.target, r.Off - 1}] || call+5 > uint64(len(out)) || out[call] != 0xe8 {
				return false, nil
			}
			delete(sites, site{rs.target, r.Off - 1})
			patches = append(patches, patch{call, rs.offset + uint64(i)*24})
		}
	}
	if len(sites) != 0 {
		return false, nil // a listed site without its call: not what this expects
	}
	for _, p := range patches {
		copy(out[p.call:], nop5)
		// r_info 0: symbol 0, type R_X86_64_NONE, which the loader skips.
		binary.LittleEndian.PutUint64(out[p.rela+8:], 0)
	}
	return true, nil
}

// relaSection is one SHT_RELA section of a module: where it lies in the
// file, the index of the section it applies to, and its entries.
type relaSection struct {
	offset  uint64
	target  int
	entries []elf.Rela64
}

// relocations returns f's SHT_RELA sections that apply to a section keep
// accepts.
func relocations(f *elf.File, keep func(target *elf.Section) bool) ([]relaSection, error) {
	var out []relaSection
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || int(s.Info) >= len(f.Sections) || !keep(f.Sections[s.Info]) {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.Name, err)
		}
		if len(b)%24 != 0 {
			return nil, fmt.Errorf("relocation section %s is not a whole number of entries", s.Name)
		}
		rs := relaSection{offset: s.Offset, target: int(s.Info), entries: make([]elf.Rela64, len(b)/24)}
		for i := range rs.entries {
			e := b[i*24:]
			rs.entries[i] = elf.Rela64{
				Off:    binary.LittleEndian.Uint64(e),
				Info:   binary.LittleEndian.Uint64(e[8:]),
				Addend: int64(binary.LittleEndian.Uint64(e[16:])),
			}
		}
		out = append(out, rs)
	}
	return out, nil
}
