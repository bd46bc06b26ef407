package workspace

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
)

// A pack from the agent's VM is read here before git sees a byte of it:
// its size on the wire says little about what git will hold in memory,
// since a few KiB of zlib inflate to gigabytes and a delta may declare a
// result of any size. checkPack parses the pack as it forwards it to
// `git index-pack` and refuses one whose objects declare, or inflate to,
// more than PackLimits allow, before index-pack reads that object's header.
//
// The pack format (gitformat-pack(5)): "PACK", a version (2 or 3) and an
// object count, each 4 bytes big-endian; per object a header of its type
// and inflated size (a varint, 4 bits in the first byte and 7 in each
// next one), for an OFS_DELTA the distance back to its base, for a
// REF_DELTA the base's id, then a zlib stream; at the end, the SHA-1 of
// everything before it. A delta's inflated data starts with the sizes of
// its base and of its result, two varints of 7 bits a byte.

// PackLimits bound what one save's packs may make git inflate.
type PackLimits struct {
	// MaxObject bounds the size of one object: what its header declares
	// and, for a delta, the result it declares. index-pack holds an
	// object of this size (a delta's base and result, both) in memory.
	MaxObject int64
	// MaxInflated bounds the sum over every pack of one save of the
	// sizes objects declare (for a delta, its data and its result).
	MaxInflated int64
	// MaxObjects bounds the object count of one pack: index-pack
	// allocates an entry per object from the count in the header.
	MaxObjects uint32
}

// DefaultPackLimits: a large binary committed by an agent is legitimate,
// so one object may be 512 MiB.
var DefaultPackLimits = PackLimits{MaxObject: 512 << 20, MaxInflated: 8 << 30, MaxObjects: 4_000_000}

// ErrPackTooLarge: a pack's objects declare, or inflate to, more than the
// PackLimits allow.
var ErrPackTooLarge = errors.New("the session's work inflates to more than Sandbar takes in")

// packFormatError is a pack that is not one: git would refuse it too.
type packFormatError struct{ msg string }

func (e *packFormatError) Error() string { return e.msg }

func badPack(format string, args ...any) error {
	return &packFormatError{msg: fmt.Sprintf(format, args...)}
}

// errPackEOF: the input ended inside the pack.
var errPackEOF = errors.New("the input ended inside the pack")

// errPackCut: the pack goes on past the bytes its section claimed.
var errPackCut = errors.New("the pack is longer than its section claimed")

// packWriteError: the pack could not be forwarded (index-pack died; what
// it said is the error to report).
type packWriteError struct{ err error }

func (e *packWriteError) Error() string { return "forward the pack to git: " + e.err.Error() }
func (e *packWriteError) Unwrap() error { return e.err }

// packStats describes a checked pack.
type packStats struct {
	Objects  uint32
	Bytes    int64 // on the wire, trailer included
	Inflated int64 // declared sizes, as counted against MaxInflated
}

// Pack object types.
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objTag      = 4
	objOfsDelta = 6
	objRefDelta = 7
)

const (
	// packFlush is how many checked bytes are forwarded at once.
	packFlush = 64 << 10
	// maxHeld bounds the bytes held back while an object's header and,
	// for a delta, the first bytes of its data are read (a zlib stream
	// may open with empty blocks; git's never has many).
	maxHeld = 1 << 20
	// hashSize is the length of an object id: the mirror uses SHA-1.
	hashSize = sha1.Size
)

// packReader is what checkPack and zlib read the pack through: it takes
// exactly the bytes asked for from src (bufio.Reader hands out no more
// than asked, and flate reads exactly its stream's bytes from an
// io.ByteReader), counts them, and forwards them to dst once checked.
type packReader struct {
	src     *bufio.Reader
	left    int64 // bytes it may still take, -1 for no bound
	off     int64 // bytes taken
	pending []byte
	hold    bool // keep pending back: the current header is not yet checked
	hash    hash.Hash
	dst     io.Writer
	err     error
}

func (p *packReader) take(b []byte) error {
	p.off += int64(len(b))
	p.pending = append(p.pending, b...)
	if p.hold && len(p.pending) > maxHeld {
		return badPack("an object at offset %d opens with more than %d KiB of compressed data that holds nothing", p.off, maxHeld>>10)
	}
	if !p.hold && len(p.pending) >= packFlush {
		return p.flush(true)
	}
	return nil
}

// flush forwards the pending bytes, adding them to the pack's checksum
// unless they are the checksum itself.
func (p *packReader) flush(sum bool) error {
	if len(p.pending) == 0 {
		return nil
	}
	if sum {
		p.hash.Write(p.pending)
	}
	if _, err := p.dst.Write(p.pending); err != nil {
		return &packWriteError{err}
	}
	p.pending = p.pending[:0]
	return nil
}

func (p *packReader) srcErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errPackEOF
	}
	return err
}

func (p *packReader) ReadByte() (byte, error) {
	if p.err != nil {
		return 0, p.err
	}
	if p.left == 0 {
		p.err = errPackCut
		return 0, p.err
	}
	c, err := p.src.ReadByte()
	if err != nil {
		p.err = p.srcErr(err)
		return 0, p.err
	}
	if p.left > 0 {
		p.left--
	}
	if err := p.take([]byte{c}); err != nil {
		p.err = err
		return 0, err
	}
	return c, nil
}

func (p *packReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if len(b) == 0 {
		return 0, nil
	}
	if p.left == 0 {
		p.err = errPackCut
		return 0, p.err
	}
	if p.left > 0 && int64(len(b)) > p.left {
		b = b[:p.left]
	}
	n, err := p.src.Read(b)
	if p.left > 0 {
		p.left -= int64(n)
	}
	if terr := p.take(b[:n]); terr != nil {
		p.err = terr
		return n, terr
	}
	if err != nil {
		p.err = p.srcErr(err)
		return n, p.err
	}
	return n, nil
}

func (p *packReader) readFull(b []byte) error {
	_, err := io.ReadFull(p, b)
	if err != nil && p.err != nil {
		return p.err
	}
	return err
}

// checkPack reads one pack from src, at most limit bytes of it (-1 for
// no bound), checks it against lim, and forwards it to dst; budget is what
// is left of lim.MaxInflated for this save, and goes down by what the pack
// declares. It reads exactly the pack's bytes from src, so what follows
// the pack stays there. Memory stays bounded: objects are inflated in
// 32 KiB steps and thrown away, counting their bytes.
func checkPack(src *bufio.Reader, limit int64, dst io.Writer, lim PackLimits, budget *int64) (packStats, error) {
	p := &packReader{src: src, left: limit, hash: sha1.New(), dst: dst, hold: true}
	var st packStats
	var hdr [12]byte
	if err := p.readFull(hdr[:]); err != nil {
		return st, err
	}
	if !bytes.Equal(hdr[:4], []byte("PACK")) {
		return st, badPack("it does not start as a pack does")
	}
	version := be32(hdr[4:8])
	if version != 2 && version != 3 {
		return st, badPack("pack version %d is not one git writes", version)
	}
	count := be32(hdr[8:12])
	if count > lim.MaxObjects {
		return st, badPack("the pack claims %d objects, more than the %d Sandbar takes in one pack", count, lim.MaxObjects)
	}
	var zr io.ReadCloser
	tooLarge := func(what string, n int64) error {
		return fmt.Errorf("%w: %s of %s, more than the %s one object may have: keep files that large out of git (or raise the limit)", ErrPackTooLarge, what, sizeStr(n), sizeStr(lim.MaxObject))
	}
	spend := func(n int64) error {
		*budget -= n
		if *budget < 0 {
			return fmt.Errorf("%w: its objects inflate to more than %s in all: commit less (large files belong outside git), or raise the limit", ErrPackTooLarge, sizeStr(lim.MaxInflated))
		}
		return nil
	}
	for i := uint32(0); i < count; i++ {
		start := p.off
		p.hold = true
		typ, size, err := objectHeader(p)
		if err != nil {
			return st, err
		}
		switch typ {
		case objCommit, objTree, objBlob, objTag:
		case objOfsDelta:
			back, err := ofsDistance(p)
			if err != nil {
				return st, err
			}
			if back <= 0 || back > start {
				return st, badPack("the delta at offset %d names a base outside the pack", start)
			}
		case objRefDelta:
			var id [hashSize]byte
			if err := p.readFull(id[:]); err != nil {
				return st, err
			}
		default:
			return st, badPack("the object at offset %d has type %d, which is no git object", start, typ)
		}
		if size > lim.MaxObject {
			return st, tooLarge("an object", size)
		}
		if err := spend(size); err != nil {
			return st, err
		}
		st.Inflated += size
		if zr == nil {
			zr, err = zlib.NewReader(p)
		} else {
			err = zr.(zlib.Resetter).Reset(p, nil)
		}
		if err != nil {
			if p.err != nil {
				return st, p.err
			}
			return st, badPack("the object at offset %d is not zlib data: %v", start, err)
		}
		cr := &countingByteReader{r: zr}
		if typ == objOfsDelta || typ == objRefDelta {
			// The delta's own header: base size, then result size.
			if _, err := deltaVarint(cr); err != nil {
				return st, deltaErr(p, start, err)
			}
			result, err := deltaVarint(cr)
			if err != nil {
				return st, deltaErr(p, start, err)
			}
			if result > lim.MaxObject {
				return st, tooLarge("a delta whose result is", result)
			}
			if err := spend(result); err != nil {
				return st, err
			}
			st.Inflated += result
		}
		// Checked: what follows may reach git as it is read.
		p.hold = false
		rest := size - cr.n
		if rest < 0 {
			return st, badPack("the object at offset %d inflates to more than the %d bytes its header declares", start, size)
		}
		n, err := io.CopyN(io.Discard, cr.r, rest+1)
		switch {
		case p.err != nil:
			return st, p.err
		case n > rest:
			return st, badPack("the object at offset %d inflates to more than the %d bytes its header declares", start, size)
		case !errors.Is(err, io.EOF):
			return st, badPack("the object at offset %d is not valid zlib data: %v", start, err)
		case n < rest:
			return st, badPack("the object at offset %d inflates to %d bytes, not the %d its header declares", start, cr.n+n, size)
		}
		st.Objects++
	}
	if err := p.flush(true); err != nil {
		return st, err
	}
	want := p.hash.Sum(nil)
	p.hold = true // the trailer is forwarded once compared
	got := make([]byte, hashSize)
	if err := p.readFull(got); err != nil {
		return st, err
	}
	if !bytes.Equal(got, want) {
		return st, badPack("the pack's checksum does not match its contents")
	}
	if err := p.flush(false); err != nil {
		return st, err
	}
	st.Bytes = p.off
	return st, nil
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// objectHeader reads an object's type and declared size.
func objectHeader(p *packReader) (typ int, size int64, err error) {
	start := p.off
	c, err := p.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	typ = int(c>>4) & 7
	size = int64(c & 15)
	shift := uint(4)
	for c&0x80 != 0 {
		if c, err = p.ReadByte(); err != nil {
			return 0, 0, err
		}
		if shift > 56 {
			return 0, 0, badPack("the object at offset %d declares a size that overflows", start)
		}
		size |= int64(c&0x7f) << shift
		shift += 7
	}
	return typ, size, nil
}

// ofsDistance reads an OFS_DELTA's distance back to its base.
func ofsDistance(p *packReader) (int64, error) {
	start := p.off
	c, err := p.ReadByte()
	if err != nil {
		return 0, err
	}
	ofs := int64(c & 0x7f)
	for c&0x80 != 0 {
		if c, err = p.ReadByte(); err != nil {
			return 0, err
		}
		if ofs >= 1<<55 {
			return 0, badPack("the delta at offset %d names a base offset that overflows", start)
		}
		ofs = (ofs+1)<<7 | int64(c&0x7f)
	}
	return ofs, nil
}

// countingByteReader counts the inflated bytes read through it.
type countingByteReader struct {
	r io.Reader
	n int64
	b [1]byte
}

func (c *countingByteReader) ReadByte() (byte, error) {
	n, err := io.ReadFull(c.r, c.b[:])
	c.n += int64(n)
	return c.b[0], err
}

// deltaVarint reads one size from a delta's header.
func deltaVarint(r io.ByteReader) (int64, error) {
	var v int64
	for shift := uint(0); ; shift += 7 {
		if shift > 56 {
			return 0, errors.New("a size that overflows")
		}
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
}

func deltaErr(p *packReader, start int64, err error) error {
	if p.err != nil {
		return p.err
	}
	return badPack("the delta at offset %d has a malformed header: %v", start, err)
}

// sizeStr writes a size for a person: in MiB, KiB or bytes.
func sizeStr(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
