//go:build linux

package main

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

// pipeEnd is one end of the host channel for readGoAhead: what the guest
// writes goes to out, what the host wrote comes from in.
type pipeEnd struct {
	in  io.Reader
	out bytes.Buffer
}

func (p *pipeEnd) Read(b []byte) (int, error)  { return p.in.Read(b) }
func (p *pipeEnd) Write(b []byte) (int, error) { return p.out.Write(b) }

// TestReadGoAhead: the guest says it waits, then takes one go-ahead line;
// one that is not JSON, too long, or lacks a real seed or machine-id is
// refused with words saying what is wrong (PID 1 then powers off and the
// host boots the VM cold).
func TestReadGoAhead(t *testing.T) {
	seed := `"` + strings.Repeat("QUFB", 16) + `"` // 48 bytes, base64
	for _, tt := range []struct {
		name, host, wantErr string
	}{
		{"good", `{"cmdline":"sandbar.root=/dev/vda","seed":` + seed + `,"time_ns":1,"machine_id":"0123456789abcdef0123456789abcdef","mac":"02:00:00:00:00:01"}` + "\n", ""},
		{"not json", "hello\n", "not JSON"},
		{"no seed", `{"cmdline":"","machine_id":"0123456789abcdef0123456789abcdef"}` + "\n", "seed is 0 bytes"},
		{"bad id", `{"seed":` + seed + `,"machine_id":"xyz"}` + "\n", "not 32 hex digits"},
		{"no newline", `{"seed":` + seed, "read the go-ahead"},
		{"huge", strings.Repeat("x", maxGoAhead+10) + "\n", "read the go-ahead"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &pipeEnd{in: bufio.NewReader(strings.NewReader(tt.host))}
			g, err := readGoAhead(p)
			if got := p.out.String(); got != templateWaiting+"\n" {
				t.Errorf("the guest wrote %q, want the waiting line", got)
			}
			if tt.wantErr == "" {
				if err != nil || g.CommandLine != "sandbar.root=/dev/vda" || len(g.Seed) != 48 || g.MAC != "02:00:00:00:00:01" {
					t.Errorf("go-ahead %+v, %v", g, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

// TestCmdlineTemplate: sandbar.template=1 asks for the wait point.
func TestCmdlineTemplate(t *testing.T) {
	c, err := parseCmdline("console=ttyS0 sandbar.template=1 sandbar.channel=serial")
	if err != nil || !c.template || len(c.unknown) != 0 {
		t.Errorf("template %v, unknown %v, err %v", c.template, c.unknown, err)
	}
	if c, _ := parseCmdline("console=ttyS0"); c.template {
		t.Error("a plain command line asks for a template")
	}
}
