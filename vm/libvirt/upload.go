package libvirt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// hashCache remembers files' content hashes by path, size and
// modification time, so that each boot does not read the whole image
// again (about 1 GiB).
type hashCache struct {
	mu sync.Mutex
	m  map[hashKey]string
}

type hashKey struct {
	path  string
	size  int64
	mtime time.Time
}

func (hc *hashCache) hash(path string) (string, int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", 0, err
	}
	k := hashKey{path, fi.Size(), fi.ModTime()}
	hc.mu.Lock()
	sum, ok := hc.m[k]
	hc.mu.Unlock()
	if ok {
		return sum, fi.Size(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	hw := sha256.New()
	if _, err := io.Copy(hw, f); err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	sum = hex.EncodeToString(hw.Sum(nil))
	hc.mu.Lock()
	if hc.m == nil {
		hc.m = map[hashKey]string{}
	}
	hc.m[k] = sum
	hc.mu.Unlock()
	return sum, fi.Size(), nil
}

// upload makes sure the host's cache holds each file, by content hash,
// sending only what it lacks, and returns each file's path on the host.
// A file is written under a temporary name and renamed once whole, so
// a dropped connection leaves no half file under a hash's name.
func (h *Hypervisor) upload(ctx context.Context, c *conn, dir string, files []string) (map[string]string, error) {
	// One upload at a time per host from this process: two sessions
	// starting together send the image once.
	h.uploadMu.Lock()
	defer h.uploadMu.Unlock()
	remote := map[string]string{}
	sums := map[string]string{}
	var names []string
	for _, p := range files {
		if _, ok := remote[p]; ok {
			continue
		}
		sum, _, err := h.hashes.hash(p)
		if err != nil {
			return nil, fmt.Errorf("read %s to send it to %s: %w", p, c.t.Host, err)
		}
		sums[p] = sum
		remote[p] = dir + "/images/" + sum
		names = append(names, sum)
	}
	// One round trip says which the host lacks.
	out, err := c.run(ctx, "cd "+shq(dir+"/images")+" && for h in "+strings.Join(names, " ")+"; do [ -e \"$h\" ] || echo \"$h\"; done", nil)
	if err != nil {
		return nil, err
	}
	missing := map[string]bool{}
	for _, l := range strings.Fields(out) {
		missing[l] = true
	}
	for _, p := range files {
		sum := sums[p]
		if !missing[sum] {
			continue
		}
		delete(missing, sum)
		if err := h.send(ctx, c, p, remote[p]); err != nil {
			return nil, err
		}
	}
	return remote, nil
}

// send copies one file to dst on the host.
func (h *Hypervisor) send(ctx context.Context, c *conn, src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	cr := &countReader{r: f}
	// A temporary name of this upload's own ($$, the remote shell's
	// pid): another Sandbar sending the same file at once writes its
	// own, and each rename puts a whole file in place.
	cmd := "t=" + shq(dst+".part.") + `$$; trap 'rm -f -- "$t"' EXIT; cat > "$t" && chmod 0444 "$t" && mv -f -- "$t" ` + shq(dst)
	if _, err := c.run(ctx, "sh -c "+shq(cmd), cr); err != nil {
		if strings.Contains(err.Error(), "No space left") {
			return fmt.Errorf("send %s to %s: the host's disk is full: free space there: %w", src, c.t.Host, ErrDiskFull)
		}
		return fmt.Errorf("send %s to %s: %w", src, c.t.Host, err)
	}
	h.uploaded.Add(cr.n)
	h.log.Info("uploaded to the host's cache", "file", src, "bytes", cr.n, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
