package broker

import (
	"bytes"
	"io"
)

// scrubReader masks real values in a body as it streams. It holds back
// only bytes that could begin a value (fewer than the longest value), so an
// SSE event reaches the guest as soon as the upstream sends it unless its
// last bytes happen to spell the start of a secret; everything else is
// passed on from the same Read that brought it. The mask has the value's
// length, so the body's length is unchanged.
type scrubReader struct {
	src io.ReadCloser
	s   *scrubber
	buf []byte
	// buf[r:ready] is scrubbed and waiting to be read; buf[ready:n] might
	// begin a value and waits for more input.
	r, ready, n int
	err         error
}

func newScrubReader(src io.ReadCloser, s *scrubber) *scrubReader {
	return &scrubReader{src: src, s: s, buf: make([]byte, max(32<<10, 2*s.maxLen))}
}

func (sr *scrubReader) Read(p []byte) (int, error) {
	for {
		if sr.r < sr.ready {
			n := copy(p, sr.buf[sr.r:sr.ready])
			sr.r += n
			return n, nil
		}
		if sr.err != nil {
			if sr.ready < sr.n {
				// The stream ended inside what might have been a value: it
				// was not one.
				sr.ready = sr.n
				continue
			}
			return 0, sr.err
		}
		// Everything before ready is read: keep the held tail, read more.
		sr.n = copy(sr.buf, sr.buf[sr.ready:sr.n])
		sr.r, sr.ready = 0, 0
		m, err := sr.src.Read(sr.buf[sr.n:])
		sr.n += m
		sr.err = err
		sr.ready = sr.s.mask(sr.buf[:sr.n])
	}
}

func (sr *scrubReader) Close() error { return sr.src.Close() }

// mask overwrites every whole value in b with its mask and returns how much
// of b is decided: all of it, or up to the earliest byte from which the
// rest of b is a proper prefix of a value.
func (s *scrubber) mask(b []byte) int {
	for _, p := range s.patterns {
		for off := 0; ; {
			i := bytes.Index(b[off:], p.find)
			if i < 0 {
				break
			}
			copy(b[off+i:], p.mask)
			off += i + len(p.find)
		}
	}
	for i := max(0, len(b)-(s.maxLen-1)); i < len(b); i++ {
		if !s.first[b[i]] {
			continue
		}
		tail := b[i:]
		for _, p := range s.patterns {
			if len(tail) < len(p.find) && bytes.HasPrefix(p.find, tail) {
				return i
			}
		}
	}
	return len(b)
}
