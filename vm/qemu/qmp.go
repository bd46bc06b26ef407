package qemu

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// qmpCommand connects to a QMP socket, negotiates capabilities and runs one
// command without arguments, returning its error reply if any.
func qmpCommand(socket, command string) error {
	c, err := dialQMP(socket, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.execute(command, nil, nil)
}

// qmpConn is one QMP session: a connection past capability negotiation.
// A monitor serves one client at a time, so it is held only as long as
// its commands take.
type qmpConn struct {
	conn *net.UnixConn
	r    *bufio.Reader
}

// dialQMP connects and negotiates capabilities; the connection's deadline
// is now+timeout, for all the commands run on it.
func dialQMP(socket string, timeout time.Duration) (*qmpConn, error) {
	conn, err := net.DialTimeout("unix", socket, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("qmp: %w", err)
	}
	c := &qmpConn{conn: conn.(*net.UnixConn), r: bufio.NewReader(conn)}
	c.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := c.r.ReadBytes('\n'); err != nil { // greeting
		conn.Close()
		return nil, fmt.Errorf("qmp greeting: %w", err)
	}
	if err := c.execute("qmp_capabilities", nil, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *qmpConn) Close() error { return c.conn.Close() }

// execute runs command with args (nil for none) and decodes its return
// value into out (nil to drop it).
func (c *qmpConn) execute(command string, args, out any) error {
	return c.executeWithFile(command, args, out, nil)
}

// executeWithFile is execute with f passed along (SCM_RIGHTS), as getfd
// takes it.
func (c *qmpConn) executeWithFile(command string, args, out any, f *os.File) error {
	req := map[string]any{"execute": command}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("qmp %s: %w", command, err)
	}
	var oob []byte
	if f != nil {
		oob = unix.UnixRights(int(f.Fd()))
	}
	if _, _, err := c.conn.WriteMsgUnix(append(b, '\n'), oob, nil); err != nil {
		return fmt.Errorf("qmp %s: %w", command, err)
	}
	for {
		// QMP's replies and events are bounded by QEMU, not by the
		// guest: nothing here is guest data.
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("qmp %s: %w", command, err)
		}
		var reply struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Desc string `json:"desc"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &reply) != nil {
			continue
		}
		if reply.Error != nil {
			return fmt.Errorf("qmp %s: %s", command, reply.Error.Desc)
		}
		if reply.Return == nil {
			continue // an asynchronous event; keep reading for the reply
		}
		if out != nil {
			if err := json.Unmarshal(reply.Return, out); err != nil {
				return fmt.Errorf("qmp %s: reply %s: %w", command, reply.Return, err)
			}
		}
		return nil
	}
}
