package broker_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/net/broker"
)

// BenchmarkAPIBroker measures what the broker adds to a request: in one
// run it alternates requests to a tiny loopback upstream, direct and
// through the broker (keep-alive both ways), and reports the medians.
func BenchmarkAPIBroker(b *testing.B) {
	const reply = `{"id":"msg_01","type":"message","content":[{"type":"text","text":"ok"}]}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
	}))
	defer up.Close()
	s, err := broker.NewSentinel("ANTHROPIC_API_KEY")
	if err != nil {
		b.Fatal(err)
	}
	key := broker.Credential{Name: "ANTHROPIC_API_KEY", Sentinel: s, Value: realAPIKey, Header: "x-api-key"}
	u, err := url.Parse(up.URL)
	if err != nil {
		b.Fatal(err)
	}
	api, err := broker.NewAPI(broker.APIConfig{Upstream: u, Credentials: []broker.Credential{key}})
	if err != nil {
		b.Fatal(err)
	}
	brokerSrv := httptest.NewUnstartedServer(api)
	brokerSrv.Config = broker.NewServer(api, nil)
	brokerSrv.Start()
	defer brokerSrv.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	do := func(base string) time.Duration {
		req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(`{"model":"m","max_tokens":1}`))
		req.Header.Set("X-Api-Key", key.Sentinel)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return d
	}
	do(up.URL) // open the keep-alive connections
	do(brokerSrv.URL)

	direct := make([]time.Duration, 0, b.N)
	brokered := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		direct = append(direct, do(up.URL))
		brokered = append(brokered, do(brokerSrv.URL))
	}
	b.StopTimer()
	md, mb := median(direct), median(brokered)
	b.ReportMetric(ms(md), "direct-ms/req")
	b.ReportMetric(ms(mb), "brokered-ms/req")
	b.ReportMetric(ms(mb-md), "added-ms/req")
	b.ReportMetric(float64(mb)/float64(md), "ratio")
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkReadOnlyInterception measures what reading a read-only host's
// requests costs (issue 21, finding 7): small GETs to a TLS upstream on
// loopback, direct and through the read-only Interceptor (keep-alive both
// ways, alternated, medians), and a 100 MB download each way. Targets:
// at most 2 ms added per request, at least 0.8x the direct throughput.
func BenchmarkReadOnlyInterception(b *testing.B) {
	const (
		requests = 200
		bigSize  = 100 << 20
		rounds   = 3
	)
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i*7 + i>>8)
	}
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", strconv.Itoa(bigSize))
			for range bigSize / len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"left-pad","dist-tags":{"latest":"1.3.0"}}`)
	})
	h := readOnly(b, "registry.test", false, up, nil)
	through := h.client(b, false)
	dtr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: h.upRoots, ServerName: "registry.test"}}
	defer dtr.CloseIdleConnections()
	direct := &http.Client{Transport: dtr}
	directURL := "https://" + h.upAddr
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
	get(direct, directURL+"/left-pad") // open the keep-alive connections
	get(through, "https://registry.test/left-pad")

	var dReq, iReq, dBig, iBig []time.Duration
	b.ResetTimer()
	for range b.N {
		for range requests {
			d, _ := get(direct, directURL+"/left-pad")
			i, _ := get(through, "https://registry.test/left-pad")
			dReq, iReq = append(dReq, d), append(iReq, i)
		}
		for range rounds {
			d, n := get(direct, directURL+"/big")
			i, m := get(through, "https://registry.test/big")
			if n != bigSize || m != bigSize {
				b.Fatalf("downloaded %d and %d bytes, want %d", n, m, bigSize)
			}
			dBig, iBig = append(dBig, d), append(iBig, i)
		}
	}
	b.StopTimer()
	md, mi := median(dReq), median(iReq)
	b.ReportMetric(ms(md), "direct-ms/req")
	b.ReportMetric(ms(mi), "readonly-ms/req")
	b.ReportMetric(ms(mi-md), "added-ms/req")
	mbps := func(d time.Duration) float64 { return float64(bigSize) / (1 << 20) / d.Seconds() }
	bd, bi := median(dBig), median(iBig)
	b.ReportMetric(mbps(bd), "direct-MB/s")
	b.ReportMetric(mbps(bi), "readonly-MB/s")
	b.ReportMetric(mbps(bi)/mbps(bd), "throughput-ratio")
}
