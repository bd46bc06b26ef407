//go:build linux

package bench

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/net/broker"
	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/sandbox"
	"sandbar/vm"
)

// downloadSize is what the download benchmark fetches, each time.
const downloadSize = 100_000_000

// sandbarNet is a guest on Sandbar's own network: the session network
// with the default allowlist, Sandbar's settings mapping files.test to
// the host's loopback and allowing it exactly, and the model-API broker
// on the gateway in front of upstream.
type sandbarNet struct {
	sb       *sandbox.Sandbox
	n        *netstack.Network
	api      *http.Server
	sentinel string // the guest's stand-in for the API key
}

func (e *benchEnv) bootSandbarNet(b *testing.B, filesPort, apiPort int) *sandbarNet {
	b.Helper()
	settings := fmt.Sprintf("host files.test 127.0.0.1\nallow files.test:%d\nallow files.test:%d\n", filesPort, apiPort)
	f, err := policy.Parse([]byte(settings), policy.SourceSandbar)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := policy.Compose("", policy.Layer{Source: policy.SourceSandbar, File: f})
	mac := net.HardwareAddr{0x5a, 0x94, 0xef, 0xbe, 0x0c, 0x01}
	n, err := netstack.New(netstack.Config{
		Decide: func(d netstack.Dest) netstack.Verdict {
			dec := p.Decide(policy.Dest{Name: d.Name, Addr: d.Addr, Port: d.Port, Proto: policy.Proto(d.Proto)})
			return netstack.Verdict{Allow: dec.Allow, Reason: dec.Reason}
		},
		Resolve: func(ctx context.Context, name string) ([]netip.Addr, error) {
			if a, ok := p.Hosts()[name]; ok {
				return []netip.Addr{a}, nil
			}
			return nil, fmt.Errorf("%s is not mapped", name)
		},
		GuestMAC: mac,
	})
	if err != nil {
		b.Fatal(err)
	}
	up, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(apiPort))
	sentinel, _ := broker.NewSentinel("ANTHROPIC_API_KEY")
	api, err := broker.NewAPI(broker.APIConfig{Upstream: up, Credentials: []broker.Credential{{
		Name: "ANTHROPIC_API_KEY", Sentinel: sentinel, Value: "sk-bench-real-key", Host: "127.0.0.1", Header: "x-api-key",
	}}})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := n.Listen(80)
	if err != nil {
		b.Fatal(err)
	}
	srv := broker.NewServer(api, nil)
	go srv.Serve(ln)
	host, guest, framing, err := sandbox.NICPair(e.hv)
	if err != nil {
		b.Fatal(err)
	}
	go n.Serve(context.Background(), host, netstack.Framing(framing))
	g := n.Guest()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := sandbox.Boot(ctx, e.hv, e.img, sandbox.Options{
		Dir: b.TempDir(), CPUs: sandbox.DefaultCPUs, Memory: memory,
		NIC: &vm.NIC{File: guest, MAC: mac, MTU: g.MTU}, NICArg: g.KernelArg(),
	})
	if err != nil {
		b.Fatalf("boot on Sandbar's network: %v", err)
	}
	s := &sandbarNet{sb: sb, n: n, api: srv, sentinel: sentinel}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sb.Shutdown(ctx)
		srv.Close()
		n.Close()
		guest.Close()
	})
	return s
}

// bootSlirp boots a guest on QEMU's user-mode network (slirp), which is
// what sessions had before: the host's loopback is its 10.0.2.2.
func (e *benchEnv) bootSlirp(b *testing.B) *sandbox.Sandbox {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := sandbox.Boot(ctx, e.hv, e.img, sandbox.Options{Dir: b.TempDir(), CPUs: sandbox.DefaultCPUs, Memory: memory, Network: true})
	if err != nil {
		b.Fatalf("boot on slirp: %v", err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sb.Shutdown(ctx)
	})
	return sb
}

// guestRun runs a shell script in the guest and returns its stdout.
func guestRun(b *testing.B, sb *sandbox.Sandbox, script string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: []string{"sh", "-c", script}}, &out, &errOut)
	if err != nil || res.Code != 0 {
		b.Fatalf("%q: %v, exit %d: %s", script, err, res.Code, errOut.String())
	}
	return out.String()
}

// pyTimes runs a Python loop in the guest that prints one figure (ms) a
// line, and returns them.
func pyTimes(b *testing.B, sb *sandbox.Sandbox, prog string) []float64 {
	b.Helper()
	out := guestRun(b, sb, "python3 -c '"+prog+"'")
	var vals []float64
	for _, l := range strings.Fields(out) {
		v, err := strconv.ParseFloat(l, 64)
		if err != nil {
			b.Fatalf("python printed %q", l)
		}
		vals = append(vals, v)
	}
	return vals
}

// BenchmarkNetwork measures Sandbar's session network against QEMU's
// slirp in the same run, one guest on each, side by side:
//   - 100 MB downloaded from a host test server, every byte checked (MD5
//     in the guest against the host's), and the same download's transfer
//     rate as curl measures it;
//   - connection setup to an allowed host (a TCP connect, in Python);
//   - the model-API broker's added latency per request: keep-alive
//     requests from the guest to the broker against the same requests
//     straight to the same upstream through the network;
//   - how long a denied connection takes to fail in the guest.
func BenchmarkNetwork(b *testing.B) {
	e := setup(b)
	data := make([]byte, downloadSize)
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	rng.Read(data)
	sum := md5.Sum(data)
	want := hex.EncodeToString(sum[:])
	files := listen(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
	}))
	api := listen(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[]}`)
	}))

	sn := e.bootSandbarNet(b, files, api)
	slirp := e.bootSlirp(b)

	runs := max(3, e.runs/2)
	checked := map[string]*series{
		"sandbar": {Metric: "download 100 MB + MD5 in the guest, Sandbar's network", Key: "download-checked", Unit: "MB/s"},
		"slirp":   {Metric: "download 100 MB + MD5 in the guest, slirp (QEMU user-mode)", Key: "download-checked-slirp", Unit: "MB/s"},
	}
	raw := map[string]*series{
		"sandbar": {Metric: "download 100 MB, transfer rate (curl), Sandbar's network", Key: "download", Unit: "MB/s"},
		"slirp":   {Metric: "download 100 MB, transfer rate (curl), slirp", Key: "download-slirp", Unit: "MB/s"},
	}
	ratioChecked := &series{Metric: "download with MD5, Sandbar's network / slirp (same run)", Key: "download-checked-ratio", Unit: "x"}
	ratioRaw := &series{Metric: "download transfer rate, Sandbar's network / slirp (same run)", Key: "download-ratio", Unit: "x"}
	guests := map[string]*sandbox.Sandbox{"sandbar": sn.sb, "slirp": slirp}
	hosts := map[string]string{"sandbar": "files.test", "slirp": "10.0.2.2"}
	for i := range runs {
		var rate, rateRaw [2]float64
		for j, name := range []string{"sandbar", "slirp"} {
			u := fmt.Sprintf("http://%s:%d/", hosts[name], files)
			start := time.Now()
			got := strings.TrimSpace(guestRun(b, guests[name], "curl -sS "+u+" | md5sum | cut -d' ' -f1"))
			took := time.Since(start)
			if got != want {
				b.Fatalf("%s run %d: the guest's MD5 %s, want %s", name, i+1, got, want)
			}
			rate[j] = downloadSize / 1e6 / took.Seconds()
			checked[name].add(rate[j])
			out := strings.Fields(guestRun(b, guests[name], "curl -sS -o /dev/null -w '%{size_download} %{speed_download}' "+u))
			if len(out) != 2 || out[0] != strconv.Itoa(downloadSize) {
				b.Fatalf("%s run %d: curl says %q, want %d bytes", name, i+1, out, downloadSize)
			}
			bps, _ := strconv.ParseFloat(out[1], 64)
			rateRaw[j] = bps / 1e6
			raw[name].add(rateRaw[j])
		}
		ratioChecked.add(rate[0] / rate[1])
		ratioRaw.add(rateRaw[0] / rateRaw[1])
		b.Logf("[%s] run %d: checked %.1f vs %.1f MB/s, transfer %.1f vs %.1f MB/s (Sandbar's network vs slirp)", e.accel, i+1, rate[0], rate[1], rateRaw[0], rateRaw[1])
	}

	// The guest's clock ticks in 4 ms steps under emulation (jiffies), so
	// each figure is the mean of a batch, timed whole, and the series is
	// of batches.
	batches, per := max(20, 2*e.runs), 20
	batch := func(setup, body string) string {
		return fmt.Sprintf(`import socket,time,http.client
%s
for b in range(%d):
    t=time.perf_counter()
    for i in range(%d):
%s
    print((time.perf_counter()-t)*1000/%d)`, setup, batches, per, indent(body, 8), per)
	}
	connect := func(host string, port int) string {
		return batch("", fmt.Sprintf(`socket.create_connection(("%s",%d)).close()`, host, port))
	}
	setupSandbar := &series{Metric: "connection setup, allowed host (TCP connect from the guest), Sandbar's network", Key: "connect", Unit: "ms"}
	setupSandbar.vals = pyTimes(b, sn.sb, connect("files.test", files))
	setupSlirp := &series{Metric: "connection setup, host (TCP connect from the guest), slirp", Key: "connect-slirp", Unit: "ms"}
	setupSlirp.vals = pyTimes(b, slirp, connect("10.0.2.2", files))

	requests := func(host string, port int, key string) string {
		return batch(fmt.Sprintf(`c=http.client.HTTPConnection("%s",%d)
c.request("GET","/"); c.getresponse().read()`, host, port),
			fmt.Sprintf(`c.request("POST","/v1/messages",body=b"{}",headers={"x-api-key":"%s"}); c.getresponse().read()`, key))
	}
	brokerDirect := &series{Metric: "model-API request from the guest, straight to the upstream (keep-alive)", Key: "api-direct", Unit: "ms"}
	brokerVia := &series{Metric: "model-API request from the guest, through the broker (keep-alive)", Key: "api-broker", Unit: "ms"}
	added := &series{Metric: "broker's added latency per request (through − straight, same batch index)", Key: "broker-added", Unit: "ms"}
	// Straight and through the broker, alternating, so a drift in the
	// machine's load shows in both.
	for range 2 {
		d := pyTimes(b, sn.sb, requests("files.test", api, "sk-straight"))
		v := pyTimes(b, sn.sb, requests(netstack.GatewayIP.String(), 80, sn.sentinel))
		brokerDirect.vals = append(brokerDirect.vals, d...)
		brokerVia.vals = append(brokerVia.vals, v...)
		for i := range min(len(d), len(v)) {
			added.add(v[i] - d[i])
		}
	}

	denied := &series{Metric: "a denied connection fails in the guest (connect → ECONNREFUSED)", Key: "denied", Unit: "ms"}
	denied.vals = pyTimes(b, sn.sb, batch("", `try:
    socket.create_connection(("denied.example",443)).close(); raise SystemExit("a denied host connected")
except ConnectionRefusedError:
    pass`))

	e.report(b, raw["sandbar"], raw["slirp"], ratioRaw, checked["sandbar"], checked["slirp"], ratioChecked,
		setupSandbar, setupSlirp, brokerDirect, brokerVia, added, denied)
}

// indent puts n spaces before every line of s.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// listen serves h on the host's loopback and returns its port.
func listen(b *testing.B, h http.Handler) int {
	b.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}
