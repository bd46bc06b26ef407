package broker_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
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
