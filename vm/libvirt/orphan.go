package libvirt

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"sandbar/vm"
)

// DomainFile is the file in a VM's directory here (vm.Spec.Dir) that
// records the domain it runs as on a host, while it may run: written once
// the domain is started, removed once its end is known. A record left
// behind names a domain that may outlive the process that booted it (its
// connection went silent and the host's guard could not run), which
// ReapOrphan finds by it.
const DomainFile = "vm.domain"

// domainRecord is what DomainFile says. The UUID names one domain across
// boots of the same name; Owner is the metadata it was started with.
type domainRecord struct {
	Host   string `json:"host"`
	Domain string `json:"domain"`
	UUID   string `json:"uuid"`
	Owner  string `json:"owner"`
}

// maxDomainFile bounds what is read of a record (a few hundred bytes).
const maxDomainFile = 4 << 10

func writeDomainRecord(vmDir string, rec domainRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	p := filepath.Join(vmDir, DomainFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// readDomainRecord reads vmDir's record; ok is false when there is none.
func readDomainRecord(vmDir string) (rec domainRecord, ok bool, err error) {
	f, err := os.Open(filepath.Join(vmDir, DomainFile))
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDomainFile+1))
	if err != nil {
		return rec, false, err
	}
	if len(b) > maxDomainFile {
		return rec, false, fmt.Errorf("%s is over %d bytes: not a record of Sandbar's", f.Name(), maxDomainFile)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if !validVMName(rec.Domain) || len(rec.UUID) != 2*golibvirt.UUIDBuflen {
		return rec, false, fmt.Errorf("%s names no domain of Sandbar's (%q, uuid %q)", f.Name(), rec.Domain, rec.UUID)
	}
	return rec, true, nil
}

// reapWait bounds how long ReapOrphan waits for a destroyed domain to go.
const reapWait = 10 * time.Second

// ReapOrphan implements vm.OrphanReaper from the host's own list of
// domains: it ends the domain that vmDir's record (DomainFile) names if
// it still runs there as the same domain (its UUID) and carries the
// metadata it was started with, and reports whether it ended one. A
// record of another host is left for that host's backend; a record whose
// domain is gone is removed. The host must be reachable: otherwise the
// error says so and the record is kept for the next try.
func (h *Hypervisor) ReapOrphan(ctx context.Context, vmDir string) (bool, error) {
	rec, ok, err := readDomainRecord(vmDir)
	if err != nil || !ok {
		return false, err
	}
	if rec.Host != h.cfg.Name {
		return false, nil
	}
	var uuid golibvirt.UUID
	if _, err := hex.Decode(uuid[:], []byte(rec.UUID)); err != nil {
		return false, fmt.Errorf("%s: uuid %q: %w", DomainFile, rec.UUID, err)
	}
	c, err := connect(ctx, h.cfg.Target, h.cfg.Auth, "")
	if err != nil {
		return false, fmt.Errorf("look for VM %s left running on %s: %w", rec.Domain, h.cfg.Name, err)
	}
	defer c.Close()
	gone := func() error { return os.Remove(filepath.Join(vmDir, DomainFile)) }
	var dom golibvirt.Domain
	var state golibvirt.DomainState
	err = c.call(func() error {
		d, err := c.lv.DomainLookupByUUID(uuid)
		if err != nil {
			return err
		}
		st, _, err := c.lv.DomainGetState(d, 0)
		dom, state = d, golibvirt.DomainState(st)
		return err
	})
	switch {
	case golibvirt.IsNotFound(err):
		return false, gone()
	case err != nil:
		return false, fmt.Errorf("look for VM %s on %s: %w", rec.Domain, h.cfg.Name, err)
	case state == golibvirt.DomainShutoff:
		return false, gone()
	}
	if dom.Name != rec.Domain || !ownedBy(c, dom, rec.Owner) {
		// Not the domain the record names (a host's UUIDs are its own):
		// left alone, and so is the record, for a person to look at.
		return false, fmt.Errorf("domain %s on %s is not the VM %s Sandbar started there: left alone", dom.Name, h.cfg.Name, rec.Domain)
	}
	h.log.Warn("ending a VM left running on the host by a Sandbar that is gone", "vm", rec.Domain, "owner", rec.Owner)
	if err := c.call(func() error { return c.lv.DomainDestroy(dom) }); err != nil && !golibvirt.IsNotFound(err) {
		return false, fmt.Errorf("end VM %s left running on %s: %w", rec.Domain, h.cfg.Name, err)
	}
	deadline := time.Now().Add(reapWait)
	for {
		var st int32
		err := c.call(func() (err error) { st, _, err = c.lv.DomainGetState(dom, 0); return err })
		if golibvirt.IsNotFound(err) || err == nil && golibvirt.DomainState(st) == golibvirt.DomainShutoff {
			return true, gone()
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("VM %s on %s was ended but still runs after %s: see `virsh list` there", rec.Domain, h.cfg.Name, reapWait)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ownedBy reports whether dom carries Sandbar's metadata with owner.
func ownedBy(c *conn, dom golibvirt.Domain, owner string) bool {
	var m vmMeta
	err := c.call(func() error {
		raw, err := c.lv.DomainGetMetadata(dom, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{MetadataNS}, golibvirt.DomainAffectLive)
		if err != nil {
			return err
		}
		return xml.Unmarshal([]byte(raw), &m)
	})
	return err == nil && m.Name == dom.Name && m.Owner == owner
}

var _ vm.OrphanReaper = (*Hypervisor)(nil)
