package netstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"sandbar/app/net/broker"
)

// memKeys keeps a CA in memory for the benchmark.
type memKeys map[string]string

func (m memKeys) Get(_ context.Context, name string) (string, error) {
	v, ok := m[name]
	if !ok {
		return "", broker.ErrNotFound
	}
	return v, nil
}

func (m memKeys) Set(_ context.Context, name, value string) error { m[name] = value; return nil }

// BenchmarkReadOnlyThroughStack measures a guest's HTTPS requests through
// the session's stack to a TLS upstream on the host's loopback, spliced
// (direct.test) and through the broker's read-only interception (ro.test,
// what the default registries and code hosts get): the median time of a
// small GET each way, alternated, and a 100 MB download each way.
// Targets (issue 21): at most 2 ms added per request, at least 0.8x the
// spliced throughput.
func BenchmarkReadOnlyThroughStack(b *testing.B) {
	const (
		requests = 100
		bigSize  = 100 << 20
		rounds   = 2
	)
	ctx := context.Background()
	world, err := broker.LoadOrCreateCA(ctx, memKeys{})
	if err != nil {
		b.Fatal(err)
	}
	sandbar, err := broker.LoadOrCreateCA(ctx, memKeys{})
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i*7 + i>>8)
	}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", strconv.Itoa(bigSize))
			for range bigSize / len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		io.WriteString(w, `{"name":"left-pad","dist-tags":{"latest":"1.3.0"}}`)
	}))
	var certs []tls.Certificate
	for _, n := range []string{"direct.test", "ro.test"} {
		c, err := world.Certificate(n)
		if err != nil {
			b.Fatal(err)
		}
		certs = append(certs, *c)
	}
	up.TLS = &tls.Config{Certificates: certs}
	up.StartTLS()
	defer up.Close()
	port := uint16(up.Listener.Addr().(*net.TCPAddr).Port)
	worldRoots, sandbarRoots := x509.NewCertPool(), x509.NewCertPool()
	worldRoots.AppendCertsFromPEM(world.CertPEM())
	sandbarRoots.AppendCertsFromPEM(sandbar.CertPEM())

	ic := &broker.Interceptor{CA: sandbar, RootCAs: worldRoots}
	tn := newTestNet(b, netOptions{cfg: Config{Intercept: func(d Dest, _ Verdict) Interceptor {
		if d.Name != "ro.test" {
			return nil
		}
		return func(ctx context.Context, guest net.Conn, dial func(context.Context) (net.Conn, error)) {
			ic.Serve(ctx, guest, broker.Target{Host: d.Name, Port: d.Port, Dial: dial, ReadOnly: true})
		}
	}}})
	client := func(name string, roots *x509.CertPool) *http.Client {
		addr := tn.lookup(b, name)
		tr := &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots},
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return tn.guest.dialTCP(ctx, addr, port)
			},
		}
		b.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	direct, through := client("direct.test", worldRoots), client("ro.test", sandbarRoots)
	base := ":" + strconv.Itoa(int(port))
	get := func(c *http.Client, u string) (time.Duration, int64) {
		start := time.Now()
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("GET %s: status %d, %v", u, resp.StatusCode, err)
		}
		return time.Since(start), n
	}
	get(direct, "https://direct.test"+base+"/left-pad")
	get(through, "https://ro.test"+base+"/left-pad")

	var dReq, iReq, dBig, iBig []time.Duration
	b.ResetTimer()
	for range b.N {
		for range requests {
			d, _ := get(direct, "https://direct.test"+base+"/left-pad")
			i, _ := get(through, "https://ro.test"+base+"/left-pad")
			dReq, iReq = append(dReq, d), append(iReq, i)
		}
		for range rounds {
			d, n := get(direct, "https://direct.test"+base+"/big")
			i, m := get(through, "https://ro.test"+base+"/big")
			if n != bigSize || m != bigSize {
				b.Fatalf("downloaded %d and %d bytes, want %d", n, m, bigSize)
			}
			dBig, iBig = append(dBig, d), append(iBig, i)
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration { d = slices.Clone(d); slices.Sort(d); return d[len(d)/2] }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	md, mi := med(dReq), med(iReq)
	b.ReportMetric(ms(md), "spliced-ms/req")
	b.ReportMetric(ms(mi), "readonly-ms/req")
	b.ReportMetric(ms(mi-md), "added-ms/req")
	mbps := func(d time.Duration) float64 { return float64(bigSize) / (1 << 20) / d.Seconds() }
	bd, bi := med(dBig), med(iBig)
	b.ReportMetric(mbps(bd), "spliced-MB/s")
	b.ReportMetric(mbps(bi), "readonly-MB/s")
	b.ReportMetric(mbps(bi)/mbps(bd), "throughput-ratio")
}
