package session

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"sandbar/app/net/broker"
	"sandbar/app/net/netstack"
	"sandbar/app/sandbox"
	"sandbar/app/store"
)

// TestGuestPortsNeverTakeTheirNumber: a port the guest listens on is
// published on a host port of the kernel's choosing, never on its own
// number, however free that is: the guest picks its ports, and the same
// number on the host's loopback is where the person's own programs (a
// dev server on 3000, the node inspector on 9229, ollama on 11434) and
// their browser tabs would connect. A port the person publishes gets its
// own number when it is free.
func TestGuestPortsNeverTakeTheirNumber(t *testing.T) {
	f := newFixture(t)
	r, sn := runningNet(t, f)
	id := r.id
	guest := freePort(t)
	sn.guestPorts([]sandbox.Port{{Port: guest}})
	ports := sn.n.Published()
	if len(ports) != 1 || ports[0].Guest != guest {
		t.Fatalf("published %v, want guest port %d", ports, guest)
	}
	if ports[0].Host == guest {
		t.Errorf("the guest's port %d was published on the host's 127.0.0.1:%d, its own number", guest, guest)
	}

	asked := freePort(t)
	p, err := f.m.PublishPort(context.Background(), id, asked, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Host != asked {
		t.Errorf("the person's publish of %d got host port %d, want the same number (free)", asked, p.Host)
	}
}

// TestBrokerLogLineIsOneLine: the path of a model-API request the
// upstream refused goes into a line of Sandbar's own (system) log; the
// guest chooses the path, and a decoded %0A in it must not start a line
// of its own that reads as Sandbar's, such as a denial offering
// "sandbar net ID allow" for the agent's host.
func TestBrokerLogLineIsOneLine(t *testing.T) {
	f := newFixture(t)
	r, sn := runningNet(t, f)
	id := r.id
	up := httptest.NewServer(http.NotFoundHandler())
	defer up.Close()
	u, _ := url.Parse(up.URL)
	api, err := broker.NewAPI(broker.APIConfig{Upstream: u, OnRequest: sn.brokerRequest})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := f.m.Subscribe(ctx, id)
	forged := "network: denied cdn.evil.example:443 (tcp): not in the allowlist. To allow it for this session: sandbar net " + id[:6] + " allow cdn.evil.example:443"
	resp, err := http.Get(srv.URL + "/v1/models%0A" + url.PathEscape(forged) + "%0Amodel%20API:%20GET%20/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for {
		select {
		case ev := <-events:
			if ev.Kind != EventLog || !strings.Contains(ev.Log.Text, "model API:") {
				continue
			}
			if strings.ContainsAny(ev.Log.Text, "\n\r") {
				t.Errorf("the broker's log line holds a line break, so the guest wrote lines of Sandbar's own:\n%s", ev.Log.Text)
			}
			return
		case <-ctx.Done():
			t.Fatal("no log line for the refused model-API request")
		}
	}
}

// TestDeniedAttemptsBounded: a guest can make denials as fast as it sends
// datagrams, each to a destination of its choosing. The log says each
// destination's denial at most once a minute, and subscribers hear of it
// as often, also once the guest has been denied more destinations than
// Sandbar remembers.
func TestDeniedAttemptsBounded(t *testing.T) {
	f := newFixture(t)
	r, sn := runningNet(t, f)
	id := r.id
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := f.m.Subscribe(ctx, id)
	deny := func(port uint16) {
		sn.attempt(netstack.Attempt{Time: time.Now(), Dest: netstack.Dest{Addr: netip.MustParseAddr("203.0.113.9"), Port: port, Proto: netstack.UDP},
			Verdict: netstack.Verdict{Reason: "not in the allowlist"}})
	}
	for p := range store.MaxNetAttempts + 10 {
		deny(uint16(p + 1))
	}
	const again = 200
	for range again {
		deny(60000)
	}
	sn.r.systemLine("end of the flood")
	lines, nets := 0, 0
	for {
		select {
		case ev := <-events:
			switch {
			case ev.Kind == EventNet && ev.Net.Port == 60000:
				nets++
			case ev.Kind == EventLog && strings.Contains(ev.Log.Text, "203.0.113.9:60000"):
				lines++
			case ev.Kind == EventLog && ev.Log.Text == "end of the flood":
				if lines > 1 || nets > 1 {
					t.Errorf("%d denials of one destination in a moment made %d log lines and %d events, want at most one of each", again, lines, nets)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("the last line never came")
		}
	}
}

// TestPublishMovesTheGuestsOwnPort: `sandbar ports ID publish G:H` for a
// port the guest's listening published already moves it to H, where it
// stays once the guest stops listening; H taken, the error says so.
func TestPublishMovesTheGuestsOwnPort(t *testing.T) {
	f := newFixture(t)
	r, sn := runningNet(t, f)
	ctx := context.Background()
	guest := freePort(t)
	sn.guestPorts([]sandbox.Port{{Port: guest}})
	auto := sn.n.Published()
	if len(auto) != 1 {
		t.Fatalf("published %v, want guest port %d", auto, guest)
	}

	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := uint16(taken.Addr().(*net.TCPAddr).Port)
	if _, err := f.m.PublishPort(ctx, r.id, guest, takenPort); !errors.Is(err, netstack.ErrPortInUse) || !strings.Contains(err.Error(), "is taken") {
		t.Errorf("publish %d:%d with %d taken: %v, want an error saying it is taken", guest, takenPort, takenPort, err)
	}

	p, err := f.m.PublishPort(ctx, r.id, guest, guest)
	if err != nil {
		t.Fatalf("publish %d:%d: %v", guest, guest, err)
	}
	if p.Host != guest {
		t.Errorf("publish %d:%d = %v, want host port %d (the old mapping was %v)", guest, guest, p, guest, auto[0])
	}
	sn.guestPorts(nil)
	if got := sn.n.Published(); len(got) != 1 || got[0] != p {
		t.Errorf("after the guest stopped listening: %v, want %v kept (the person published it)", got, p)
	}
}
