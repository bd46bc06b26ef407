package libvirt

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"golang.org/x/crypto/ssh"

	"sandbar/vm"
	"sandbar/vm/caplog"
)

// GuardTimeout bounds how long a domain outlives a connection that went
// silent without closing (a laptop that slept, a network that dropped):
// the guard on the host ends the domain when no heartbeat came for this
// long. A connection that closes ends it at once (libvirt's autodestroy).
const GuardTimeout = 15 * time.Second

// heartbeat is how often the guard hears from this machine.
const heartbeat = 5 * time.Second

// machine is one domain on a host and the streams brought back from it.
type machine struct {
	c    *conn
	dom  golibvirt.Domain
	spec vm.Spec
	log  *slog.Logger

	channel  net.Conn
	console  net.Conn
	consDone chan struct{}
	nicLn    net.Listener // the NIC's port on the host, until QEMU connects
	nic      net.Conn     // the host's end of the NIC stream
	local    net.Conn     // Sandbar's network's end (spec.NIC.File)
	guard    *ssh.Session
	pumps    sync.WaitGroup

	exit *vm.Exit
}

func (h *Hypervisor) boot(ctx context.Context, c *conn, f Facts, spec vm.Spec) (*machine, error) {
	// Read-only files go to the host's cache, once per content.
	ro := []string{spec.Kernel, spec.Initramfs}
	for _, d := range spec.Disks {
		if d.ReadOnly {
			ro = append(ro, d.Path)
		}
	}
	t0 := time.Now()
	remote, err := h.upload(ctx, c, f.Dir, ro)
	if err != nil {
		return nil, err
	}
	tUpload := time.Since(t0)
	if len(spec.Name) > maxNameLen || strings.ContainsAny(spec.Name, "/ '\"\x00") {
		return nil, fmt.Errorf("VM name %q: use at most %d letters, digits or dashes on a remote host: %w", spec.Name, maxNameLen, vm.ErrInvalidSpec)
	}
	vmDir := f.Dir + "/vms/" + spec.Name
	p := plan{
		Name: spec.Name, KVM: f.KVM, TSCkHz: f.TSCkHz,
		Kernel: remote[spec.Kernel], Initrd: remote[spec.Initramfs],
		Channel: vmDir + "/channel.sock", Owner: h.cfg.Owner, Session: spec.Name,
	}
	if spec.ConsoleLog != "" {
		p.Console = vmDir + "/console.sock"
	}
	// Writable disks are made on the host (qcow2 of the Spec's disk's
	// size) and kept there: a restart of the session continues on them.
	mk := []string{"set -e", "mkdir -p " + shq(vmDir), "rm -f " + shq(p.Channel) + " " + shq(vmDir+"/console.sock")}
	for i, d := range spec.Disks {
		if d.ReadOnly {
			p.Disks = append(p.Disks, planDisk{Path: remote[d.Path], Format: "raw", ReadOnly: true})
			continue
		}
		size, err := fileSize(d.Path)
		if err != nil {
			return nil, fmt.Errorf("scratch disk %s: %w", d.Path, err)
		}
		rp := fmt.Sprintf("%s/disk%d.qcow2", vmDir, i)
		mk = append(mk, fmt.Sprintf("[ -e %s ] || qemu-img create -q -f qcow2 %s %d", shq(rp), shq(rp), size))
		p.Disks = append(p.Disks, planDisk{Path: rp, Format: "qcow2"})
	}
	if _, err := c.run(ctx, "sh -c "+shq(strings.Join(mk, "\n")), nil); err != nil {
		if strings.Contains(err.Error(), "No space left") {
			return nil, fmt.Errorf("make the scratch disk on %s: the host's disk is full: free space there: %w", c.t.Host, ErrDiskFull)
		}
		return nil, fmt.Errorf("make the scratch disk on %s: %w", c.t.Host, err)
	}
	var nicLn net.Listener
	if spec.Network == vm.NetworkSocket {
		p.NICMAC, p.NICMTU = spec.NIC.MAC.String(), spec.NIC.MTU
		// QEMU connects out to a port sshd listens on for this
		// connection on the host's loopback (a remote forward): a
		// connecting socket netdev has its link up from the start,
		// where a listening one starts down and never tells the card.
		ln, err := c.ssh.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("a port on %s for the VM's network card (sshd's AllowTcpForwarding): %w", c.t.Host, err)
		}
		defer ln.Close()
		nicLn = ln
		p.NICPort = ln.Addr().(*net.TCPAddr).Port
	}

	// A domain of this name left from a run whose connection went
	// silent is this VM's own: it goes before the new one starts.
	if old, err := c.lv.DomainLookupByName(p.Name); err == nil {
		h.log.Warn("ending a leftover domain of the same name", "vm", p.Name)
		c.lv.DomainDestroy(old)
	}
	t1 := time.Now()
	dom, err := h.create(c, p, spec)
	if err != nil {
		return nil, err
	}
	tCreate := time.Since(t1)
	m := &machine{c: c, dom: dom, spec: spec, log: h.log.With("vm", spec.Name), exit: vm.NewExit(), nicLn: nicLn}
	// Recorded before anything can fail: a domain whose connection goes
	// silent may outlive this process, and the next one finds it by this.
	rec := domainRecord{Host: h.cfg.Name, Domain: dom.Name, UUID: hex.EncodeToString(dom.UUID[:]), Owner: h.cfg.Owner}
	if err := writeDomainRecord(spec.Dir, rec); err != nil {
		m.log.Warn("no record of the domain: were this process to die with its connection silent, the next would not find the VM", "err", err)
	}
	t2 := time.Now()
	if err := m.connect(ctx, p); err != nil {
		m.end(err)
		c.lv.DomainDestroy(dom)
		return nil, err
	}
	h.log.Info("domain up", "vm", spec.Name, "upload_check", tUpload.Round(time.Millisecond),
		"disks", t1.Sub(t0.Add(tUpload)).Round(time.Millisecond), "create", tCreate.Round(time.Millisecond), "streams", time.Since(t2).Round(time.Millisecond))
	return m, nil
}

// create starts the transient domain with autodestroy: libvirt ends it
// when this connection closes.
func (h *Hypervisor) create(c *conn, p plan, spec vm.Spec) (golibvirt.Domain, error) {
	withMTU := true
	var lastErr error
	for try := 0; try < 2; try++ {
		dom, err := c.lv.DomainCreateXML(p.domainXML(spec, withMTU), golibvirt.DomainStartAutodestroy)
		if err == nil {
			return dom, nil
		}
		lastErr = err
		msg := err.Error()
		switch {
		case withMTU && strings.Contains(strings.ToLower(msg), "mtu"):
			withMTU = false
		default:
			return golibvirt.Domain{}, fmt.Errorf("start the VM on %s: %w", c.t.Host, err)
		}
	}
	return golibvirt.Domain{}, fmt.Errorf("start the VM on %s: %w", c.t.Host, lastErr)
}

func fileSize(p string) (int64, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// connect brings the domain's streams back and starts watching it.
func (m *machine) connect(ctx context.Context, p plan) error {
	// Watch first: a domain that dies at once must not be missed.
	evCtx, stopEvents := context.WithCancel(context.Background())
	events, err := m.c.lv.LifecycleEvents(evCtx)
	if err != nil {
		stopEvents()
		return fmt.Errorf("watch the VM on %s: %w", m.c.t.Host, err)
	}
	go func() {
		defer stopEvents()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					m.end(fmt.Errorf("%w (%s): the VM there was stopped with it", vm.ErrHostLost, m.c.t.Host))
					return
				}
				if ev.Dom.Name != m.dom.Name {
					continue
				}
				switch golibvirt.DomainEventType(ev.Event) {
				case golibvirt.DomainEventStopped:
					var err error
					if golibvirt.DomainEventStoppedDetailType(ev.Detail) == golibvirt.DomainEventStoppedFailed {
						err = errors.New("the VM failed on the host")
					}
					m.end(err)
					return
				case golibvirt.DomainEventCrashed:
					m.end(errors.New("the VM crashed on the host"))
					return
				}
			case <-m.c.lv.Disconnected():
				m.end(fmt.Errorf("%w (%s): the VM there was stopped with it", vm.ErrHostLost, m.c.t.Host))
				return
			case <-m.exit.Done():
				return
			}
		}
	}()
	// The domain may have ended before the watch began.
	if st, _, err := m.c.lv.DomainGetState(m.dom, 0); err == nil && golibvirt.DomainState(st) == golibvirt.DomainShutoff {
		m.end(errors.New("the VM stopped at once on the host"))
	}

	go m.keepalive()
	if err := m.startGuard(); err != nil {
		m.log.Warn("no guard on the host: a connection that goes silent leaves the VM running until libvirt notices", "err", err)
	}
	if p.Console != "" {
		cons, err := m.dial(ctx, "unix", p.Console)
		if err != nil {
			return fmt.Errorf("the VM's console on %s: %w", m.c.t.Host, err)
		}
		if err := caplog.Remove(m.spec.ConsoleLog); err != nil {
			cons.Close()
			return err
		}
		max := m.spec.ConsoleMax
		if max <= 0 {
			max = vm.DefaultConsoleMax
		}
		lf, err := caplog.Open(m.spec.ConsoleLog, max, []byte("[sandbar: earlier console output trimmed]\n"), 0)
		if err != nil {
			cons.Close()
			return fmt.Errorf("console log: %w", err)
		}
		m.console, m.consDone = cons, make(chan struct{})
		go func() {
			defer close(m.consDone)
			caplog.Drain(cons, lf)
		}()
	}
	ch, err := m.dial(ctx, "unix", p.Channel)
	if err != nil {
		return fmt.Errorf("the VM's channel on %s: %w", m.c.t.Host, err)
	}
	m.channel = ch
	if m.nicLn != nil {
		nic, err := m.acceptNIC(ctx)
		if err != nil {
			return fmt.Errorf("the VM's network card on %s: %w", m.c.t.Host, err)
		}
		local, err := net.FileConn(m.spec.NIC.File)
		if err != nil {
			nic.Close()
			return fmt.Errorf("the VM's network card: %w", err)
		}
		m.nic, m.local = nic, local
		// Frames both ways, as bytes: both ends speak the same
		// length-prefixed stream, which Sandbar's netstack reads as it
		// reads a local QEMU's.
		m.pumps.Add(2)
		go func() { defer m.pumps.Done(); io.Copy(nic, local); nic.Close() }()
		go func() { defer m.pumps.Done(); io.Copy(local, nic); local.Close() }()
		// QEMU's listening socket netdev starts with its link down and
		// never tells the guest's card when its client connects: the
		// card would stay without carrier. Setting the card's link up
		// once connected tells the guest.
		if _, err := m.c.lv.QEMUDomainMonitorCommand(m.dom, `{"execute":"set_link","arguments":{"name":"net0","up":true}}`, 0); err != nil {
			m.log.Warn("set the network card's link up", "err", err)
		}
	}
	return nil
}

// acceptNIC takes QEMU's connection to the NIC's port, the first one.
func (m *machine) acceptNIC(ctx context.Context) (net.Conn, error) {
	type res struct {
		c   net.Conn
		err error
	}
	got := make(chan res, 1)
	go func() {
		c, err := m.nicLn.Accept()
		got <- res{c, err}
	}()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	select {
	case r := <-got:
		m.nicLn.Close()
		return r.c, r.err
	case <-m.exit.Done():
		m.nicLn.Close()
		return nil, fmt.Errorf("the VM stopped: %w", m.exit.Err())
	case <-ctx.Done():
		m.nicLn.Close()
		return nil, errors.New("QEMU did not connect its network card")
	}
}

// dial reaches a socket on the host through the SSH connection; QEMU
// makes its sockets as it starts, so a refusal is tried again briefly.
func (m *machine) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		c, err := m.c.ssh.Dial(network, addr)
		if err == nil {
			return c, nil
		}
		select {
		case <-m.exit.Done():
			return nil, fmt.Errorf("the VM stopped: %w", m.exit.Err())
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// keepalive asks the host for an answer every heartbeat; one that does
// not come within GuardTimeout means the connection went silent (the
// host has stopped the domain by then): it is closed, and the machine
// ends with vm.ErrHostLost.
func (m *machine) keepalive() {
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-m.exit.Done():
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() {
			_, _, err := m.c.ssh.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		select {
		case <-m.exit.Done():
			return
		case err := <-answered:
			if err == nil {
				continue
			}
		case <-time.After(GuardTimeout):
		}
		m.end(fmt.Errorf("%w (%s: no answer for %s): the VM there was stopped", vm.ErrHostLost, m.c.t.Host, GuardTimeout))
		return
	}
}

// startGuard runs the guard on the host: it ends the domain when this
// machine's heartbeat stops for GuardTimeout, or its input closes.
func (m *machine) startGuard() error {
	s, err := m.c.ssh.NewSession()
	if err != nil {
		return err
	}
	in, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return err
	}
	script := fmt.Sprintf("while read -r -t %d _; do :; done; virsh -q -c qemu:///system destroy %s >/dev/null 2>&1",
		int(GuardTimeout/time.Second), shq(m.dom.Name))
	if err := s.Start("bash -c " + shq(script)); err != nil {
		s.Close()
		return err
	}
	m.guard = s
	go func() {
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-m.exit.Done():
				in.Close()
				return
			case <-t.C:
				if _, err := in.Write([]byte("\n")); err != nil {
					return
				}
			}
		}
	}()
	return nil
}

// end records why the machine ended, once, and lets go of its streams
// and the connection (which, closing, ends the domain if it still runs).
func (m *machine) end(err error) {
	if !m.exit.End(err) {
		return
	}
	// Where the host was lost the domain may still run there (the
	// guard ends it, if it could start): the record stays for
	// ReapOrphan. Otherwise the domain is known to have ended.
	if !errors.Is(err, vm.ErrHostLost) {
		os.Remove(filepath.Join(m.spec.Dir, DomainFile))
	}
	go m.release()
}

func (m *machine) release() {
	if m.channel != nil {
		m.channel.Close()
	}
	if m.nic != nil {
		m.nic.Close()
		m.local.Close()
	}
	m.pumps.Wait()
	if m.console != nil {
		m.console.SetReadDeadline(time.Now().Add(2 * time.Second))
		<-m.consDone
		m.console.Close()
	}
	if m.guard != nil {
		m.guard.Close()
	}
	m.c.Close()
}

func (m *machine) Conn() io.ReadWriteCloser { return m.channel }

// PID is 0: the VM's process is on another machine.
func (m *machine) PID() int { return 0 }

func (m *machine) Wait(ctx context.Context) error { return m.exit.Wait(ctx) }

// Stop presses the power button (libvirt's shutdown, ACPI) and ends the
// domain when it has not powered off in time (vm.Exit.PowerOff).
func (m *machine) Stop(ctx context.Context) error {
	if m.exit.PowerOff(ctx, func() error { return m.c.call(func() error { return m.c.lv.DomainShutdown(m.dom) }) }) {
		return nil
	}
	m.log.Warn("guest did not power off; ending the domain")
	m.Kill()
	<-m.exit.Done()
	return nil
}

// Kill ends the domain at once; if the host cannot be told, closing the
// connection ends it (autodestroy).
func (m *machine) Kill() error {
	if m.exit.Exited() {
		return nil
	}
	if err := m.c.call(func() error { return m.c.lv.DomainDestroy(m.dom) }); err != nil {
		// The connection is closed by now, which ends the domain.
		m.end(fmt.Errorf("killed: %w", err))
	}
	return nil
}

func (m *machine) Stats() (vm.Stats, error) {
	if m.exit.Exited() {
		return vm.Stats{}, vm.ErrNotRunning
	}
	var st vm.Stats
	err := m.c.call(func() error {
		_, _, _, _, cpu, err := m.c.lv.DomainGetInfo(m.dom)
		if err != nil {
			return err
		}
		st.CPUTime = time.Duration(cpu)
		if ms, err := m.c.lv.DomainMemoryStats(m.dom, 16, 0); err == nil {
			for _, s := range ms {
				if golibvirt.DomainMemoryStatTags(s.Tag) == golibvirt.DomainMemoryStatRss {
					st.RSS = s.Val << 10
				}
			}
		}
		return nil
	})
	if err != nil {
		return vm.Stats{}, vm.ErrNotRunning
	}
	return st, nil
}
