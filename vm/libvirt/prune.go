package libvirt

import (
	"context"
	"encoding/xml"
	"fmt"
	"sort"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// Leftover is something of Sandbar's on a host: a running domain that
// carries Sandbar's metadata, or a VM's folder (its scratch disk), or
// both under one VM name.
type Leftover struct {
	// Name is the VM's name (sandbar-<session id>).
	Name string
	// Running: a domain of Sandbar's by that name runs; Owner is who
	// started it (its metadata).
	Running bool
	Owner   string
	// Folder: the VM's folder is there (its scratch disks).
	Folder bool
}

// vmMeta is Sandbar's metadata element of a domain.
type vmMeta struct {
	Name    string `xml:"name"`
	Session string `xml:"session"`
	Owner   string `xml:"owner"`
}

// Leftovers lists what of Sandbar's is on the host, from the host's own
// lists: its running domains that carry Sandbar's metadata, and the VMs'
// folders. Domains without Sandbar's metadata are never listed.
func (h *Hypervisor) Leftovers(ctx context.Context) ([]Leftover, error) {
	c, err := connect(ctx, h.cfg.Target, h.cfg.Auth, "")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	f, err := facts(ctx, c, h.cfg.Dir)
	if err != nil {
		return nil, err
	}
	return leftovers(ctx, c, f.Dir)
}

func leftovers(ctx context.Context, c *conn, dir string) ([]Leftover, error) {
	byName := map[string]*Leftover{}
	get := func(n string) *Leftover {
		if l, ok := byName[n]; ok {
			return l
		}
		l := &Leftover{Name: n}
		byName[n] = l
		return l
	}
	doms, _, err := c.lv.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive)
	if err != nil {
		return nil, fmt.Errorf("list the domains on %s: %w", c.t.Host, err)
	}
	for _, d := range doms {
		raw, err := c.lv.DomainGetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{MetadataNS}, golibvirt.DomainAffectLive)
		if err != nil {
			continue // not Sandbar's
		}
		var m vmMeta
		if xml.Unmarshal([]byte(raw), &m) != nil || m.Name != d.Name {
			continue
		}
		l := get(d.Name)
		l.Running, l.Owner = true, m.Owner
	}
	out, err := c.run(ctx, "ls -1 "+shq(dir+"/vms"), nil)
	if err != nil {
		return nil, err
	}
	for _, n := range strings.Fields(out) {
		if validVMName(n) {
			get(n).Folder = true
		}
	}
	list := make([]Leftover, 0, len(byName))
	for _, l := range byName {
		list = append(list, *l)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

// validVMName: a name Sandbar gives its VMs, safe in a path and a shell.
func validVMName(n string) bool {
	if n == "" || len(n) > maxNameLen || n == "." || n == ".." {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Prune ends the running domains and removes the folders of the VMs
// named, as Leftovers listed them; it returns what it removed.
func (h *Hypervisor) Prune(ctx context.Context, names []string) ([]string, error) {
	c, err := connect(ctx, h.cfg.Target, h.cfg.Auth, "")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	f, err := facts(ctx, c, h.cfg.Dir)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, n := range names {
		if !validVMName(n) {
			return done, fmt.Errorf("%q is no VM name of Sandbar's", n)
		}
		if d, err := c.lv.DomainLookupByName(n); err == nil {
			if _, err := c.lv.DomainGetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{MetadataNS}, golibvirt.DomainAffectLive); err != nil {
				return done, fmt.Errorf("domain %s on %s is not Sandbar's: left alone", n, c.t.Host)
			}
			if err := c.lv.DomainDestroy(d); err != nil {
				return done, fmt.Errorf("stop domain %s on %s: %w", n, c.t.Host, err)
			}
		}
		if _, err := c.run(ctx, "rm -rf "+shq(f.Dir+"/vms/"+n), nil); err != nil {
			return done, err
		}
		done = append(done, n)
	}
	return done, nil
}
