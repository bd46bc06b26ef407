package kernel

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// testSection is one section of a synthetic ELF file.
type testSection struct {
	name string
	typ  elf.SectionType
	data []byte
	// Optional header fields; indexes count the null section as 0, so
	// sections[i] is section i+1.
	flags      elf.SectionFlag
	link, info uint32
	entsize    uint64
}

// buildELF writes a minimal little-endian ELF64 file: the header, one
// PT_NOTE program header covering the section named by noteSection (if any),
// the section contents, .shstrtab and the section headers. It is just
// enough for debug/elf, which is what the code under test reads with.
func buildELF(typ elf.Type, machine elf.Machine, sections []testSection, noteSection string) []byte {
	le := binary.LittleEndian
	const ehsize, phentsize, shentsize = 64, 56, 64
	nph := 0
	if noteSection != "" {
		nph = 1
	}
	shstr := []byte{0}
	nameOff := make([]uint32, len(sections))
	for i, s := range sections {
		nameOff[i] = uint32(len(shstr))
		shstr = append(append(shstr, s.name...), 0)
	}
	shstrName := uint32(len(shstr))
	shstr = append(append(shstr, ".shstrtab"...), 0)

	body := bytes.Buffer{}
	off := ehsize + nph*phentsize
	dataOff := make([]int, len(sections))
	for i, s := range sections {
		for (off+body.Len())%8 != 0 {
			body.WriteByte(0)
		}
		dataOff[i] = off + body.Len()
		body.Write(s.data)
	}
	shstrOff := off + body.Len()
	body.Write(shstr)
	for (off+body.Len())%8 != 0 {
		body.WriteByte(0)
	}
	shoff := off + body.Len()

	out := make([]byte, ehsize+nph*phentsize)
	copy(out, []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	le.PutUint16(out[16:], uint16(typ))
	le.PutUint16(out[18:], uint16(machine))
	le.PutUint32(out[20:], uint32(elf.EV_CURRENT))
	if nph > 0 {
		le.PutUint64(out[32:], ehsize)
	}
	le.PutUint64(out[40:], uint64(shoff))
	le.PutUint16(out[52:], ehsize)
	le.PutUint16(out[54:], phentsize)
	le.PutUint16(out[56:], uint16(nph))
	le.PutUint16(out[58:], shentsize)
	le.PutUint16(out[60:], uint16(len(sections)+2))
	le.PutUint16(out[62:], uint16(len(sections)+1))
	for i, s := range sections {
		if s.name != noteSection {
			continue
		}
		ph := out[ehsize:]
		le.PutUint32(ph[0:], uint32(elf.PT_NOTE))
		le.PutUint32(ph[4:], uint32(elf.PF_R))
		le.PutUint64(ph[8:], uint64(dataOff[i]))
		le.PutUint64(ph[32:], uint64(len(s.data)))
		le.PutUint64(ph[40:], uint64(len(s.data)))
		le.PutUint64(ph[48:], 4)
	}
	out = append(out, body.Bytes()...)

	sh := func(name uint32, s testSection, off int) {
		h := make([]byte, shentsize)
		le.PutUint32(h[0:], name)
		le.PutUint32(h[4:], uint32(s.typ))
		le.PutUint64(h[8:], uint64(s.flags))
		le.PutUint64(h[24:], uint64(off))
		le.PutUint64(h[32:], uint64(len(s.data)))
		le.PutUint32(h[40:], s.link)
		le.PutUint32(h[44:], s.info)
		le.PutUint64(h[48:], 1)
		le.PutUint64(h[56:], s.entsize)
		out = append(out, h...)
	}
	out = append(out, make([]byte, shentsize)...) // SHN_UNDEF
	for i, s := range sections {
		sh(nameOff[i], s, dataOff[i])
	}
	sh(shstrName, testSection{typ: elf.SHT_STRTAB, data: shstr}, shstrOff)
	return out
}

// elfNote encodes one ELF note with 4-byte alignment.
func elfNote(name string, typ uint32, desc []byte) []byte {
	le := binary.LittleEndian
	pad := func(b []byte) []byte {
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	n := append([]byte(name), 0)
	out := make([]byte, 12)
	le.PutUint32(out[0:], uint32(len(n)))
	le.PutUint32(out[4:], uint32(len(desc)))
	le.PutUint32(out[8:], typ)
	out = append(out, pad(n)...)
	return append(out, pad(append([]byte(nil), desc...))...)
}

// testVmlinux is a tiny x86-64 ELF; pvh adds the PVH entry note.
func testVmlinux(pvh bool) []byte {
	notes := elfNote("GNU", 3, []byte{1, 2, 3, 4})
	if pvh {
		notes = append(notes, elfNote("Xen", xenElfnotePhys32Entry, []byte{0, 0x10, 0, 1})...)
	}
	return buildELF(elf.ET_EXEC, elf.EM_X86_64, []testSection{
		{name: ".text", typ: elf.SHT_PROGBITS, data: bytes.Repeat([]byte{0x90}, 4096)},
		{name: ".notes", typ: elf.SHT_NOTE, data: notes},
	}, ".notes")
}

// testKo is a tiny relocatable ELF with a .modinfo section.
func testKo(modinfo ...string) []byte {
	var mi []byte
	for _, kv := range modinfo {
		mi = append(append(mi, kv...), 0)
	}
	return buildELF(elf.ET_REL, elf.EM_X86_64, []testSection{
		{name: ".text", typ: elf.SHT_PROGBITS, data: []byte{0xc3}},
		{name: ".modinfo", typ: elf.SHT_PROGBITS, data: mi},
	}, "")
}
