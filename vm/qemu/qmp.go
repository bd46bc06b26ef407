package qemu

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// qmpCommand connects to a QMP socket, negotiates capabilities and runs one
// command without arguments, returning its error reply if any.
func qmpCommand(socket, command string) error {
	conn, err := net.DialTimeout("unix", socket, 2*time.Second)
	if err != nil {
		return fmt.Errorf("qmp: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	if _, err := r.ReadBytes('\n'); err != nil { // greeting
		return fmt.Errorf("qmp greeting: %w", err)
	}
	for _, c := range []string{"qmp_capabilities", command} {
		if err := json.NewEncoder(conn).Encode(map[string]string{"execute": c}); err != nil {
			return fmt.Errorf("qmp %s: %w", c, err)
		}
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return fmt.Errorf("qmp %s: %w", c, err)
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
				return fmt.Errorf("qmp %s: %s", c, reply.Error.Desc)
			}
			if reply.Return != nil {
				break
			}
			// An asynchronous event; keep reading for the reply.
		}
	}
	return nil
}
