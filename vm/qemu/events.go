package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"sandbar/vm"
)

var _ vm.DiskPauser = (*machine)(nil)

// qmpLineMax bounds one line from QMP: QEMU is Sandbar's own process, but
// a line that never ends must not grow without bound.
const qmpLineMax = 1 << 20

// DiskEvents: see vm.DiskPauser.
func (m *machine) DiskEvents() <-chan vm.DiskEvent { return m.diskEvents }

// Resume continues a VM paused on a disk error: QMP cont.
func (m *machine) Resume(ctx context.Context) error {
	if m.exit.Exited() {
		return vm.ErrNotRunning
	}
	errc := make(chan error, 1)
	go func() { errc <- qmpCommand(m.plan.QMP, "cont") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchEvents holds the events monitor (plan.QMPEvents) for the life of
// QEMU and turns its block I/O errors and run-state changes into
// DiskEvents. It returns when QEMU has exited (its socket closes, or
// exited is closed before it was reached), and closes m.diskEvents.
func (m *machine) watchEvents(exited <-chan struct{}) {
	defer close(m.diskEvents)
	if m.plan.QMPEvents == "" {
		<-exited
		return
	}
	var conn net.Conn
	for conn == nil {
		c, err := net.DialTimeout("unix", m.plan.QMPEvents, time.Second)
		if err == nil {
			conn = c
			break
		}
		select {
		case <-exited:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-exited:
			conn.Close()
		case <-stop:
		}
	}()
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	next := func() ([]byte, error) {
		var line []byte
		for {
			part, more, err := r.ReadLine()
			if err != nil {
				return nil, err
			}
			if len(line)+len(part) > qmpLineMax {
				return nil, fmt.Errorf("a QMP line of over %d bytes", qmpLineMax)
			}
			line = append(line, part...)
			if !more {
				return line, nil
			}
		}
	}
	send := func(cmd string) error {
		return json.NewEncoder(conn).Encode(map[string]string{"execute": cmd, "id": cmd})
	}
	if _, err := next(); err != nil { // greeting
		m.log.Warn("QMP events: no greeting: a full disk would pause the VM unseen", "err", err)
		return
	}
	// capabilities first; then where the VM is now, for a pause that
	// came before this connection.
	for _, c := range []string{"qmp_capabilities", "query-status", "query-block"} {
		if err := send(c); err != nil {
			m.log.Warn("QMP events: a full disk would pause the VM unseen", "err", err)
			return
		}
	}
	var ioError bool
	for {
		line, err := next()
		if err != nil {
			return // QEMU exited
		}
		var msg struct {
			ID     string          `json:"id"`
			Return json.RawMessage `json:"return"`
			Event  string          `json:"event"`
			// Timestamp is when QEMU emitted the event, by the host's
			// clock.
			Timestamp struct {
				Seconds      int64 `json:"seconds"`
				Microseconds int64 `json:"microseconds"`
			} `json:"timestamp"`
			Data struct {
				Device  string `json:"device"`
				Action  string `json:"action"`
				NoSpace bool   `json:"nospace"`
			} `json:"data"`
		}
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		now := time.Now()
		if msg.Timestamp.Seconds > 0 {
			now = time.Unix(msg.Timestamp.Seconds, msg.Timestamp.Microseconds*1000)
		}
		switch {
		case msg.ID == "query-status":
			var st struct {
				Status string `json:"status"`
			}
			json.Unmarshal(msg.Return, &st)
			ioError = st.Status == "io-error"
		case msg.ID == "query-block" && ioError:
			var blocks []struct {
				Device   string `json:"device"`
				IOStatus string `json:"io-status"`
			}
			json.Unmarshal(msg.Return, &blocks)
			ev := vm.DiskEvent{Paused: true, Time: now}
			for _, b := range blocks {
				if b.IOStatus == "nospace" || (b.IOStatus == "failed" && ev.Disk == "") {
					ev.Disk, ev.NoSpace = b.Device, b.IOStatus == "nospace"
				}
			}
			m.log.Warn("the VM was paused on a disk error before Sandbar listened", "disk", ev.Disk, "nospace", ev.NoSpace)
			vm.SendLatest(m.diskEvents, ev)
		case msg.Event == "BLOCK_IO_ERROR" && msg.Data.Action == "stop":
			m.log.Warn("the VM paused on a disk error", "disk", msg.Data.Device, "nospace", msg.Data.NoSpace)
			vm.SendLatest(m.diskEvents, vm.DiskEvent{Paused: true, NoSpace: msg.Data.NoSpace, Disk: msg.Data.Device, Time: now})
		case msg.Event == "RESUME":
			vm.SendLatest(m.diskEvents, vm.DiskEvent{Time: now})
		}
	}
}
