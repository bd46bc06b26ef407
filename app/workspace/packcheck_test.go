package workspace

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// testPack writes a pack by hand, as a hostile VM would.
type testPack struct {
	objs  [][]byte
	off   int64
	count int // written as the object count; len(objs) when 0
}

// add appends an object: type, declared size, what comes between the
// header and the zlib stream (a delta's base), and the data to deflate.
// It returns the object's offset.
func (p *testPack) add(typ int, size int64, prefix, data []byte) int64 {
	if p.off == 0 {
		p.off = 12
	}
	var b bytes.Buffer
	c := byte(typ<<4) | byte(size&15)
	size >>= 4
	for size > 0 {
		b.WriteByte(c | 0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	b.WriteByte(c)
	b.Write(prefix)
	zw, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	zw.Write(data)
	zw.Close()
	at := p.off
	p.objs = append(p.objs, b.Bytes())
	p.off += int64(b.Len())
	return at
}

func (p *testPack) bytes() []byte {
	n := p.count
	if n == 0 {
		n = len(p.objs)
	}
	b := []byte{'P', 'A', 'C', 'K', 0, 0, 0, 2, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	for _, o := range p.objs {
		b = append(b, o...)
	}
	s := sha1.Sum(b)
	return append(b, s[:]...)
}

// ofs encodes an OFS_DELTA's distance back to its base.
func ofs(d int64) []byte {
	b := []byte{byte(d & 0x7f)}
	for d >>= 7; d > 0; d >>= 7 {
		d--
		b = append([]byte{byte(0x80 | d&0x7f)}, b...)
	}
	return b
}

func varint(v int64) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// bombPack is a zero blob of base bytes and a delta that repeats it
// into result bytes: a few KiB on the wire.
func bombPack(base, result int64) (pack []byte, deltaAt int64) {
	var p testPack
	at := p.add(objBlob, base, nil, make([]byte, base))
	delta := append(varint(base), varint(result)...)
	for left := result; left > 0; left -= 8 << 20 {
		delta = append(delta, 0xc0, 0x80) // copy 8 MiB from offset 0
	}
	deltaAt = p.add(objOfsDelta, int64(len(delta)), ofs(p.off-at), delta)
	return p.bytes(), deltaAt
}

// TestCheckPackRefusesBombs: a delta whose result passes MaxObject is
// refused before index-pack is sent a byte of it; so is a blob whose
// header declares too much, and a pack whose objects inflate to more
// than MaxInflated in all.
func TestCheckPackRefusesBombs(t *testing.T) {
	t.Parallel()
	lim := DefaultPackLimits
	for _, tc := range []struct {
		name         string
		base, result int64
	}{
		{"1 GiB", 16 << 20, 1 << 30},
		{"16 GiB", 16 << 20, 16 << 30},
	} {
		pack, deltaAt := bombPack(tc.base, tc.result)
		if len(pack) > 64<<10 {
			t.Fatalf("%s: the bomb is %d bytes, not a small pack", tc.name, len(pack))
		}
		var sent bytes.Buffer
		budget := lim.MaxInflated
		_, err := checkPack(bufio.NewReader(bytes.NewReader(pack)), -1, &sent, lim, &budget)
		if !errors.Is(err, ErrPackTooLarge) || !strings.Contains(err.Error(), "512 MiB") {
			t.Errorf("%s: err = %v, want ErrPackTooLarge naming the 512 MiB limit", tc.name, err)
		}
		if int64(sent.Len()) > deltaAt {
			t.Errorf("%s: %d bytes reached git, past the delta's header at %d", tc.name, sent.Len(), deltaAt)
		}
	}

	// A delta under MaxObject passes; many of them pass MaxInflated.
	pack, _ := bombPack(1<<20, 256<<20)
	budget := lim.MaxInflated
	if st, err := checkPack(bufio.NewReader(bytes.NewReader(pack)), -1, &bytes.Buffer{}, lim, &budget); err != nil || st.Objects != 2 || st.Inflated != 1<<20+256<<20+int64(len(varint(1<<20))+len(varint(256<<20))+64) {
		t.Errorf("a 256 MiB delta: %+v, %v", st, err)
	}
	small := PackLimits{MaxObject: 512 << 20, MaxInflated: 200 << 20, MaxObjects: 10}
	budget = small.MaxInflated
	if _, err := checkPack(bufio.NewReader(bytes.NewReader(pack)), -1, &bytes.Buffer{}, small, &budget); !errors.Is(err, ErrPackTooLarge) || !strings.Contains(err.Error(), "200 MiB in all") {
		t.Errorf("past MaxInflated: err = %v", err)
	}
	// The budget is the save's: a second pack spends what is left.
	budget = 600 << 20
	small.MaxInflated = budget
	for i, want := range []bool{true, true, false} {
		_, err := checkPack(bufio.NewReader(bytes.NewReader(pack)), -1, &bytes.Buffer{}, small, &budget)
		if (err == nil) != want {
			t.Errorf("pack %d of one save: err = %v", i, err)
		}
	}

	var p testPack
	p.add(objBlob, 600<<20, nil, []byte("tiny"))
	var sent bytes.Buffer
	budget = lim.MaxInflated
	if _, err := checkPack(bufio.NewReader(bytes.NewReader(p.bytes())), -1, &sent, lim, &budget); !errors.Is(err, ErrPackTooLarge) || sent.Len() > 12 {
		t.Errorf("a blob declaring 600 MiB: err = %v, %d bytes sent", err, sent.Len())
	}
}

// TestCheckPackFraming: a pack git wrote passes, byte for byte, and what
// follows it stays in the reader; malformed packs are refused.
func TestCheckPackFraming(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	for i := range 3 {
		commitT(t, root, "f.txt", strings.Repeat("line\n", 1000*(i+1)), "more")
	}
	writeFile(t, root+"/big.bin", strings.Repeat("0123456789abcdef", 1<<16))
	gitT(t, root, "add", "big.bin")
	commitT(t, root, "g.txt", "x", "big")
	cmd := exec.Command("git", "-C", root, "pack-objects", "--revs", "--stdout", "-q", "--delta-base-offset")
	cmd.Env, cmd.Stdin = gitEnv(), strings.NewReader("HEAD\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pack := string(out)
	lim := DefaultPackLimits
	in := bufio.NewReaderSize(strings.NewReader(pack+"after"), 16)
	var sent bytes.Buffer
	budget := lim.MaxInflated
	st, err := checkPack(in, -1, &sent, lim, &budget)
	if err != nil || sent.String() != pack || st.Bytes != int64(len(pack)) || st.Objects < 10 {
		t.Fatalf("a pack from git: %+v, %v; %d of %d bytes forwarded", st, err, sent.Len(), len(pack))
	}
	if rest, _ := in.ReadString(0); rest != "after" {
		t.Errorf("after the pack, the reader holds %q", rest)
	}
	if _, err := checkPack(bufio.NewReader(strings.NewReader(pack)), int64(len(pack)-1), &bytes.Buffer{}, lim, &budget); !errors.Is(err, errPackCut) {
		t.Errorf("a pack longer than its bound: err = %v", err)
	}
	if _, err := checkPack(bufio.NewReader(strings.NewReader(pack[:len(pack)-5])), -1, &bytes.Buffer{}, lim, &budget); !errors.Is(err, errPackEOF) {
		t.Errorf("a pack cut short: err = %v", err)
	}

	bad := func(name string, b []byte, want string) {
		t.Helper()
		budget := lim.MaxInflated
		_, err := checkPack(bufio.NewReader(bytes.NewReader(b)), -1, &bytes.Buffer{}, lim, &budget)
		var fe *packFormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", name, err, want)
		}
	}
	var p testPack
	p.add(objBlob, 3, nil, []byte("four"))
	bad("longer than declared", p.bytes(), "more than the 3 bytes")
	p = testPack{}
	p.add(objBlob, 5, nil, []byte("four"))
	bad("shorter than declared", p.bytes(), "inflates to 4 bytes, not the 5")
	p = testPack{}
	p.add(5, 4, nil, []byte("four"))
	bad("type 5", p.bytes(), "type 5")
	p = testPack{}
	p.add(objOfsDelta, 2, ofs(100), []byte{1, 1})
	bad("delta base outside", p.bytes(), "base outside the pack")
	p = testPack{count: 5_000_000}
	bad("count", p.bytes(), "5000000 objects")
	p = testPack{}
	p.add(objBlob, 4, nil, []byte("four"))
	b := p.bytes()
	b[len(b)-1] ^= 1
	bad("checksum", b, "checksum")
	bad("version", []byte("PACK\x00\x00\x00\x04\x00\x00\x00\x00"), "version 4")
	bad("not a pack", []byte("KCAP\x00\x00\x00\x02\x00\x00\x00\x00"), "does not start")
}

// TestImportSaveRefusesBomb: a save whose pack is a delta bomb is
// refused with the limit named, and the session's refs stay as they were.
func TestImportSaveRefusesBomb(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	c := sessionT(t, root, "bomb")
	pack, _ := bombPack(16<<20, 16<<30)
	hdr := "sandbar-save 2 " + c.base + " " + c.base + " " + c.base + "\n"
	_, err := c.m.ImportSave(ctx, strings.NewReader(hdr+"pack\n"+string(pack)), c.id, 1<<20)
	if !errors.Is(err, ErrPackTooLarge) || !strings.Contains(err.Error(), "one object may have") {
		t.Errorf("main pack: err = %v, want ErrPackTooLarge", err)
	}
	in := hdr + "module " + c.base + " " + strconv.Itoa(len(pack)) + " lib\n" + string(pack) + "pack\n"
	if _, err := c.m.ImportSave(ctx, strings.NewReader(in), c.id, 1<<20); !errors.Is(err, ErrPackTooLarge) || !strings.Contains(err.Error(), `submodule "lib"`) {
		t.Errorf("submodule pack: err = %v, want ErrPackTooLarge", err)
	}
	if _, ok := c.m.Saved(ctx, c.id); ok {
		t.Error("a refused save moved the session's refs")
	}
	// A limit set on the mirror applies.
	c.save(t)
	m := *c.m
	m.Limits.MaxObject = 1 << 10
	writeFile(t, c.dir+"/big.txt", strings.Repeat("x", 4<<10))
	cl := *c
	cl.m = &m
	if _, err := cl.trySave(1 << 30); !errors.Is(err, ErrPackTooLarge) || !strings.Contains(err.Error(), "more than the 1 KiB") {
		t.Errorf("MaxObject 1 KiB: err = %v", err)
	}
}
