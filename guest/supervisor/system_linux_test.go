package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEnsureUser(t *testing.T) {
	etc := t.TempDir()
	writeFiles(t, etc, map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\nold:x:1001:1002::/home/old:/bin/sh", // no final newline
		"group":  "root:x:0:\n",
		"shadow": "root:*:1:0:99999:7:::\n",
	})
	u, err := ensureUser(etc, "agent", 1000, "/home/agent")
	if err != nil || u != (User{Name: "agent", UID: 1000, GID: 1000, Home: "/home/agent"}) {
		t.Fatalf("new user: %+v, %v", u, err)
	}
	again, err := ensureUser(etc, "agent", 1000, "/home/agent")
	if err != nil || again != u {
		t.Fatalf("second call: %+v, %v", again, err)
	}
	old, err := ensureUser(etc, "old", 1000, "/home/agent")
	if err != nil || old != (User{Name: "old", UID: 1001, GID: 1002, Home: "/home/old"}) {
		t.Fatalf("existing user: %+v, %v", old, err)
	}
	for file, want := range map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\nold:x:1001:1002::/home/old:/bin/sh\nagent:x:1000:1000::/home/agent:",
		"group":  "root:x:0:\nagent:x:1000:\n",
		"shadow": "root:*:1:0:99999:7:::\nagent:*:",
	} {
		data, _ := os.ReadFile(filepath.Join(etc, file))
		if !strings.HasPrefix(string(data), want) || strings.Count(string(data), "\nagent:") != 1 {
			t.Errorf("%s =\n%s\nwant it to start with\n%s", file, data, want)
		}
	}
}

func TestFindPort(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"none", map[string]string{}, ""},
		{"other names", map[string]string{"class/virtio-ports/vport0p1/name": "org.qemu.guest_agent.0\n"}, ""},
		{"found", map[string]string{
			"class/virtio-ports/vport0p1/name": "org.qemu.guest_agent.0\n",
			"class/virtio-ports/vport1p2/name": PortName + "\n",
		}, "vport1p2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := t.TempDir()
			writeFiles(t, sys, tt.files)
			got, err := findPort(sys, PortName)
			if err != nil || got != tt.want {
				t.Errorf("findPort = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestOpenPortWithin(t *testing.T) {
	sys, dev := t.TempDir(), t.TempDir()
	if _, err := openPortWithin(t.Context(), sys, dev, 30*time.Millisecond); !errors.Is(err, errNoPort) {
		t.Fatalf("no port: %v, want errNoPort", err)
	}
	writeFiles(t, sys, map[string]string{"class/virtio-ports/vport2p1/name": PortName + "\n"})
	writeFiles(t, dev, map[string]string{"vport2p1": ""})
	f, err := openPortWithin(t.Context(), sys, dev, time.Second)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	f.Close()

	// Listed but the node never shows up: retried until ctx ends.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	os.Remove(filepath.Join(dev, "vport2p1"))
	if _, err := openPortWithin(ctx, sys, dev, time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("missing node: %v, want the context's deadline", err)
	}
}

// TestOpenChannelKinds: the host's sandbar.channel picks the channel, and
// vsock is taken at once, without looking for a port first.
func TestOpenChannelKinds(t *testing.T) {
	vsockConn := &os.File{}
	opener := func(t *testing.T, withPort bool) (channelOpener, *int) {
		sys, dev := t.TempDir(), t.TempDir()
		if withPort {
			writeFiles(t, sys, map[string]string{"class/virtio-ports/vport1p1/name": PortName + "\n"})
			writeFiles(t, dev, map[string]string{"vport1p1": ""})
		}
		calls := new(int)
		return channelOpener{sysRoot: sys, devRoot: dev, autoWait: 300 * time.Millisecond, serialWait: 100 * time.Millisecond,
			vsock: func(context.Context) (io.ReadWriteCloser, error) { *calls++; return vsockConn, nil }}, calls
	}
	tests := []struct {
		kind     string
		withPort bool
		want     string // "port", "vsock", or an error's words
		within   time.Duration
	}{
		{ChannelVsock, false, "vsock", 100 * time.Millisecond},
		{ChannelVsock, true, "vsock", 100 * time.Millisecond},
		{ChannelSerial, true, "port", time.Second},
		{ChannelSerial, false, "sandbar.channel=serial but no virtio-serial port", 2 * time.Second},
		{ChannelAuto, true, "port", time.Second},
		{"", false, "vsock", 2 * time.Second}, // after autoWait
		{"pigeon", true, "want auto, serial or vsock", 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s port=%v", tt.kind, tt.withPort), func(t *testing.T) {
			o, calls := opener(t, tt.withPort)
			start := time.Now()
			c, err := o.open(t.Context(), tt.kind)
			took := time.Since(start)
			switch tt.want {
			case "vsock":
				if err != nil || c != vsockConn || *calls != 1 {
					t.Fatalf("got %v, %v after %d vsock calls; want the vsock connection", c, err, *calls)
				}
			case "port":
				if err != nil || *calls != 0 {
					t.Fatalf("got %v, %v after %d vsock calls; want the port", c, err, *calls)
				}
				c.Close()
			default:
				if err == nil || !strings.Contains(err.Error(), tt.want) || *calls != 0 {
					t.Fatalf("err = %v after %d vsock calls, want one containing %q", err, *calls, tt.want)
				}
			}
			if took > tt.within {
				t.Errorf("took %s, want under %s", took, tt.within)
			}
		})
	}
}
