package netstack

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// pattern fills b with the bytes found at offset off of an endless
// stream in which each 8-byte word says where it is: a lost, repeated or
// misplaced segment shows as a word out of place.
func pattern(b []byte, off int64) {
	for i := range b {
		pos := off + int64(i)
		word := uint64(pos/8) * 0x9e3779b97f4a7c15
		b[i] = byte(word >> (8 * (7 - pos%8)))
	}
}

// sendPattern writes size bytes of pattern to w.
func sendPattern(w io.Writer, size int64) error {
	buf := make([]byte, 256<<10)
	for off := int64(0); off < size; {
		k := min(int64(len(buf)), size-off)
		pattern(buf[:k], off)
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// TestDownload64MiB moves 64 MiB from a host server to the guest through
// the stack with the default MTU and checks every byte.
func TestDownload64MiB(t *testing.T) {
	for _, f := range []Framing{Stream, Datagram} {
		t.Run(f.String(), func(t *testing.T) {
			const size = 64 << 20
			tn := newTestNet(t, netOptions{framing: f})
			port := hostServer(t, func(c net.Conn) {
				if err := sendPattern(c, size); err != nil {
					t.Errorf("host write: %v", err)
				}
			})
			c, err := tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "download.test"), port)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(2 * time.Minute))
			got, want := make([]byte, 256<<10), make([]byte, 256<<10)
			var off int64
			for {
				k, err := c.Read(got)
				if k > 0 {
					pattern(want[:k], off)
					if string(got[:k]) != string(want[:k]) {
						t.Fatalf("the bytes at %d..%d are not the host's", off, off+int64(k))
					}
					off += int64(k)
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("read at %d: %v", off, err)
				}
			}
			if off != size {
				t.Errorf("the guest got %d bytes, want %d", off, size)
			}
			if st := tn.Stats(); st.TxDropped.Load() != 0 {
				t.Logf("%d frames to the guest dropped (TCP sent them again)", st.TxDropped.Load())
			}
		})
	}
}

// BenchmarkDownload measures a host-to-guest TCP download through the
// stack in both framings, default MTU; it reports MB/s and never fails on
// time.
func BenchmarkDownload(b *testing.B) {
	for _, f := range []Framing{Stream, Datagram} {
		b.Run(f.String(), func(b *testing.B) {
			const chunk = 1 << 20
			tn := newTestNet(b, netOptions{framing: f})
			port := hostServer(b, func(c net.Conn) {
				var size int64
				if err := binary.Read(c, binary.BigEndian, &size); err != nil {
					return
				}
				sendPattern(c, size)
			})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			c, err := tn.guest.dialTCP(ctx, tn.lookup(b, "bench.test"), port)
			if err != nil {
				b.Fatalf("dial: %v", err)
			}
			defer c.Close()
			size := int64(b.N) * chunk
			b.ResetTimer()
			start := time.Now()
			if err := binary.Write(c, binary.BigEndian, size); err != nil {
				b.Fatal(err)
			}
			got, err := io.Copy(io.Discard, c)
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil || got != size {
				b.Fatalf("read %d of %d bytes: %v", got, size, err)
			}
			b.ReportMetric(float64(size)/1e6/elapsed.Seconds(), "MB/s")
			b.ReportMetric(float64(tn.Stats().TxDropped.Load()), "dropped-frames")
		})
	}
}
