package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"

	"github.com/ulikunitz/xz/lzma"
)

// The x86 kernel is compressed with `xz --x86 --lzma2` (scripts/xz_wrap.sh):
// a BCJ filter in front of LZMA2, which github.com/ulikunitz/xz does not
// decode. xzBCJ reads that one shape of stream itself: one block whose
// filter chain is x86 BCJ then LZMA2, decoded with ulikunitz's LZMA2 reader
// and then un-BCJ'd here, and checked against the block's CRC.

const (
	xzFilterX86   = 0x04
	xzFilterLZMA2 = 0x21
)

var errNotBCJ = errors.New("not an x86 BCJ + LZMA2 xz stream")

// xzBCJ decodes an xz stream made of one x86 BCJ + LZMA2 block. It returns
// errNotBCJ for any other filter chain, so callers can fall back.
func xzBCJ(b []byte) ([]byte, error) {
	if len(b) < 12+12 || !bytes.HasPrefix(b, []byte{0xfd, '7', 'z', 'X', 'Z', 0}) {
		return nil, errors.New("no xz stream header")
	}
	checkType := b[7] & 0x0f
	blk := b[12:]
	hdrSize := (int(blk[0]) + 1) * 4
	if blk[0] == 0 || hdrSize > len(blk) {
		return nil, errors.New("bad xz block header")
	}
	hdr := blk[:hdrSize]
	if crc32.ChecksumIEEE(hdr[:hdrSize-4]) != binary.LittleEndian.Uint32(hdr[hdrSize-4:]) {
		return nil, errors.New("xz block header CRC mismatch: the kernel is corrupt")
	}
	flags := hdr[1]
	p := hdr[2 : hdrSize-4]
	next := func() (uint64, error) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, errors.New("bad xz block header varint")
		}
		p = p[n:]
		return v, nil
	}
	if flags&0x40 != 0 {
		if _, err := next(); err != nil {
			return nil, err
		}
	}
	if flags&0x80 != 0 {
		if _, err := next(); err != nil {
			return nil, err
		}
	}
	if flags&3 != 1 { // two filters
		return nil, errNotBCJ
	}
	var ids [2]uint64
	var props [2][]byte
	for i := range ids {
		id, err := next()
		if err != nil {
			return nil, err
		}
		n, err := next()
		if err != nil {
			return nil, err
		}
		if n > uint64(len(p)) {
			return nil, errors.New("bad xz filter properties")
		}
		ids[i], props[i], p = id, p[:n], p[n:]
	}
	if ids[0] != xzFilterX86 || ids[1] != xzFilterLZMA2 || len(props[1]) != 1 {
		return nil, errNotBCJ
	}
	var start uint32
	if len(props[0]) == 4 {
		start = binary.LittleEndian.Uint32(props[0])
	}
	dictCap := lzma2DictSize(props[1][0])
	r, err := lzma.Reader2Config{DictCap: dictCap}.NewReader2(bytes.NewReader(blk[hdrSize:]))
	if err != nil {
		return nil, fmt.Errorf("xz LZMA2: %w", err)
	}
	out, err := readBounded(r)
	if err != nil {
		return nil, fmt.Errorf("xz LZMA2: %w", err)
	}
	bcjX86Decode(out, start)
	if err := xzVerifyCheck(b, checkType, out); err != nil {
		return nil, err
	}
	return out, nil
}

func lzma2DictSize(p byte) int {
	if p >= 40 {
		return 1<<31 - 1
	}
	return int(2|p&1) << (p/2 + 11)
}

// xzVerifyCheck compares the single block's check, which sits just before
// the index, with data. The stream may be followed by the kernel's 4-byte
// size.
func xzVerifyCheck(b []byte, checkType byte, data []byte) error {
	end := len(b)
	if !bytes.HasSuffix(b, []byte("YZ")) && bytes.HasSuffix(b[:len(b)-4], []byte("YZ")) {
		end -= 4
	}
	if end < 24 || string(b[end-2:end]) != "YZ" {
		return errors.New("xz stream footer not found: the kernel is truncated")
	}
	footer := b[end-12 : end]
	indexSize := (int(binary.LittleEndian.Uint32(footer[4:])) + 1) * 4
	indexStart := end - 12 - indexSize
	var size int
	switch checkType {
	case 0:
		return nil
	case 1:
		size = 4
	case 4:
		size = 8
	case 10:
		size = 32
	default:
		return fmt.Errorf("xz check type %d is unknown", checkType)
	}
	if indexStart-size < 12 {
		return errors.New("xz index out of range: the kernel is corrupt")
	}
	check := b[indexStart-size : indexStart]
	var ok bool
	switch checkType {
	case 1:
		ok = crc32.ChecksumIEEE(data) == binary.LittleEndian.Uint32(check)
	case 4:
		ok = crc64.Checksum(data, crc64.MakeTable(crc64.ECMA)) == binary.LittleEndian.Uint64(check)
	default:
		return nil // SHA-256: never used for kernels; LZMA2 has its own framing
	}
	if !ok {
		return errors.New("xz block check mismatch after BCJ decoding: the kernel is corrupt")
	}
	return nil
}

// bcjX86Decode undoes the x86 branch/call/jump filter in place: relative
// targets of E8/E9 instructions were made absolute by the encoder. This is
// the algorithm of xz's simple/x86.c, for the whole buffer at once.
func bcjX86Decode(buf []byte, startPos uint32) {
	maskToAllowed := [8]bool{true, true, true, false, true, false, false, false}
	maskToBitNum := [8]uint32{0, 1, 2, 2, 3, 3, 3, 3}
	testMSByte := func(b byte) bool { return b == 0 || b == 0xff }
	if len(buf) <= 4 {
		return
	}
	size := len(buf) - 4
	prevPos := -1
	var prevMask uint32
	for i := 0; i < size; i++ {
		if buf[i]&0xfe != 0xe8 {
			continue
		}
		d := i - prevPos
		if d > 3 {
			prevMask = 0
		} else {
			prevMask = (prevMask << (d - 1)) & 7
			if prevMask != 0 {
				b := buf[i+4-int(maskToBitNum[prevMask])]
				if !maskToAllowed[prevMask] || testMSByte(b) {
					prevPos = i
					prevMask = prevMask<<1 | 1
					continue
				}
			}
		}
		prevPos = i
		if !testMSByte(buf[i+4]) {
			prevMask = prevMask<<1 | 1
			continue
		}
		src := binary.LittleEndian.Uint32(buf[i+1:])
		var dest uint32
		for {
			dest = src - (startPos + uint32(i) + 5)
			if prevMask == 0 {
				break
			}
			j := maskToBitNum[prevMask] * 8
			if !testMSByte(byte(dest >> (24 - j))) {
				break
			}
			src = dest ^ (1<<(32-j) - 1)
		}
		dest &= 0x01ffffff
		dest |= -(dest & 0x01000000)
		binary.LittleEndian.PutUint32(buf[i+1:], dest)
		i += 4
	}
}
