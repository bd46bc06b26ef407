package kernel

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"slices"
	"testing"
)

// signed appends a module signature of n bytes as scripts/sign-file does.
func signed(ko []byte, n int) []byte {
	info := make([]byte, 12)
	info[2] = 2 // PKEY_ID_PKCS7
	binary.BigEndian.PutUint32(info[8:], uint32(n))
	out := append(bytes.Clone(ko), bytes.Repeat([]byte{0xa5}, n)...)
	out = append(out, info...)
	return append(out, signatureMarker...)
}

func TestStripSignature(t *testing.T) {
	ko := testKo("name=m")
	tests := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"signed", signed(ko, 523), ko},
		{"unsigned", ko, ko},
		{"marker but a length past the start", append(bytes.Clone(ko[:20]), append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0}, signatureMarker...)...), nil},
		{"marker alone", []byte(signatureMarker), []byte(signatureMarker)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil {
				want = tt.in
			}
			if got := StripSignature(tt.in); !bytes.Equal(got, want) {
				t.Fatalf("StripSignature kept %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

// allocAll sets SHF_ALLOC on every section of a buildELF file but the
// last (.shstrtab).
func allocAll(b []byte) []byte {
	le := binary.LittleEndian
	shoff, n := le.Uint64(b[0x28:]), int(le.Uint16(b[0x3c:]))
	for i := 1; i < n-1; i++ {
		h := shoff + uint64(i)*64
		le.PutUint64(b[h+8:], le.Uint64(b[h+8:])|uint64(elf.SHF_ALLOC))
	}
	return b
}

func TestSlimForBoot(t *testing.T) {
	var sections []testSection
	for _, name := range []string{".text", ".BTF", ".orc_unwind", ".orc_unwind_ip", ".static_call_sites", "_ftrace_events", "__bug_table", ".modinfo"} {
		sections = append(sections, testSection{name: name, typ: elf.SHT_PROGBITS, data: []byte(name + " data")})
	}
	ko := allocAll(buildELF(elf.ET_REL, elf.EM_X86_64, sections, ""))
	in := signed(ko, 100)
	orig := bytes.Clone(in)
	out, err := SlimForBoot(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, orig) {
		t.Error("SlimForBoot changed its input")
	}
	if len(out) != len(ko) {
		t.Errorf("%d bytes, want %d: the signature should be gone", len(out), len(ko))
	}
	f, err := elf.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name  string
		alloc bool
	}{
		{".text", true}, {"BTF", true}, {"orc_unwind", false}, {"orc_unwind_ip", false}, {"static_call_sites", true},
		{"ftrace_events", true}, {"__bug_table", true}, {".modinfo", true},
	}
	for i, w := range want {
		s := f.Sections[i+1]
		if s.Name != w.name || (s.Flags&elf.SHF_ALLOC != 0) != w.alloc {
			t.Errorf("section %d (%s): name %q alloc %v, want %q alloc %v", i+1, sections[i].name, s.Name, s.Flags&elf.SHF_ALLOC != 0, w.name, w.alloc)
		}
		if data, _ := s.Data(); string(data) != sections[i].name+" data" {
			t.Errorf("section %d (%s): data %q changed", i+1, sections[i].name, data)
		}
	}
	if _, err := modinfo(out); err != nil {
		t.Errorf("modinfo of the slimmed module: %v", err)
	}
}

func TestSlimForBootRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"not ELF":    []byte("not an ELF file at all, not even close"),
		"executable": testVmlinux(false),
		"a section named as a hidden one would be": buildELF(elf.ET_REL, elf.EM_X86_64, []testSection{
			{name: ".BTF", typ: elf.SHT_PROGBITS, data: []byte("a")},
			{name: "BTF", typ: elf.SHT_PROGBITS, data: []byte("b")},
		}, ""),
	} {
		if _, err := SlimForBoot(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// fentryModule builds a module whose .text holds two functions that start
// with "call __fentry__" and a third call, to other, at offset 12;
// __mcount_loc lists the text offsets in mcount.
func fentryModule(machine elf.Machine, mcount ...uint64) []byte {
	le := binary.LittleEndian
	call := []byte{0xe8, 0, 0, 0, 0, 0xc3}
	text := bytes.Repeat(call, 3)
	rela := func(off uint64, sym uint32, typ elf.R_X86_64, addend int64) []byte {
		e := make([]byte, 24)
		le.PutUint64(e, off)
		le.PutUint64(e[8:], uint64(sym)<<32|uint64(typ))
		le.PutUint64(e[16:], uint64(addend))
		return e
	}
	// Symbols: 1 the .text section, 2 __fentry__, 3 other.
	sym := func(name uint32, info byte, shndx uint16) []byte {
		e := make([]byte, 24)
		le.PutUint32(e, name)
		e[4] = info
		le.PutUint16(e[6:], shndx)
		return e
	}
	symtab := slices.Concat(make([]byte, 24), sym(0, byte(elf.STT_SECTION), 1),
		sym(1, byte(elf.STB_GLOBAL)<<4, 0), sym(12, byte(elf.STB_GLOBAL)<<4, 0))
	var relaText, relaMcount []byte
	for _, off := range []uint64{1, 7} {
		relaText = append(relaText, rela(off, 2, elf.R_X86_64_PLT32, -4)...)
	}
	relaText = append(relaText, rela(13, 3, elf.R_X86_64_PLT32, -4)...)
	for i, off := range mcount {
		relaMcount = append(relaMcount, rela(uint64(i)*8, 1, elf.R_X86_64_64, int64(off))...)
	}
	return buildELF(elf.ET_REL, machine, []testSection{
		{name: ".text", typ: elf.SHT_PROGBITS, data: text, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR},
		{name: ".rela.text", typ: elf.SHT_RELA, data: relaText, link: 5, info: 1, entsize: 24},
		{name: "__mcount_loc", typ: elf.SHT_PROGBITS, data: make([]byte, 8*len(mcount)), flags: elf.SHF_ALLOC},
		{name: ".rela__mcount_loc", typ: elf.SHT_RELA, data: relaMcount, link: 5, info: 3, entsize: 24},
		{name: ".symtab", typ: elf.SHT_SYMTAB, data: symtab, link: 6, info: 2, entsize: 24},
		{name: ".strtab", typ: elf.SHT_STRTAB, data: []byte("\x00__fentry__\x00other\x00")},
	}, "")
}

func TestSlimForBootNopsFentryCalls(t *testing.T) {
	read := func(t *testing.T, b []byte) (text []byte, relas []elf.Rela64, sections map[string]bool) {
		t.Helper()
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		sections = map[string]bool{}
		for _, s := range f.Sections {
			sections[s.Name] = true
		}
		text, _ = f.Section(".text").Data()
		rs, err := relocations(f, func(s *elf.Section) bool { return s.Name == ".text" })
		if err != nil || len(rs) != 1 {
			t.Fatalf("relocations of .text: %v, %v", rs, err)
		}
		return text, rs[0].entries, sections
	}
	call := []byte{0xe8, 0, 0, 0, 0}

	out, err := SlimForBoot(fentryModule(elf.EM_X86_64, 0, 6))
	if err != nil {
		t.Fatal(err)
	}
	text, relas, sections := read(t, out)
	if !bytes.Equal(text[0:5], nop5) || !bytes.Equal(text[6:11], nop5) {
		t.Errorf("the __fentry__ calls are not NOPs: % x", text)
	}
	if !bytes.Equal(text[12:17], call) {
		t.Errorf("the call to other changed: % x", text[12:17])
	}
	if relas[0].Info != 0 || relas[1].Info != 0 {
		t.Errorf("the __fentry__ relocations are still live: %+v", relas[:2])
	}
	if relas[2].Info != 3<<32|uint64(elf.R_X86_64_PLT32) {
		t.Errorf("the relocation of the call to other changed: %+v", relas[2])
	}
	if sections["__mcount_loc"] || !sections["_mcount_loc"] {
		t.Errorf("__mcount_loc not hidden: sections %v", sections)
	}

	// A listed site that is not a __fentry__ call, or a module for another
	// architecture: nothing is patched and __mcount_loc stays.
	for name, in := range map[string][]byte{
		"a site that calls other": fentryModule(elf.EM_X86_64, 0, 6, 12),
		"arm64":                   fentryModule(elf.EM_AARCH64, 0, 6),
	} {
		out, err := SlimForBoot(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text, relas, sections := read(t, out)
		if !bytes.Equal(text[0:5], call) || !bytes.Equal(text[6:11], call) || relas[0].Info == 0 || !sections["__mcount_loc"] {
			t.Errorf("%s: module changed: text % x, relocations %+v, sections %v", name, text, relas, sections)
		}
	}
}
