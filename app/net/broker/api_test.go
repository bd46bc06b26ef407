package broker_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/net/broker"
)

// Real values, long and distinct like the tokens services issue.
const (
	realAPIKey = "sk-ant-api03-REALKEY-" + "0123456789abcdefghijklmnopqrstuvwxyz-0123456789abcdefghijklmnopqrstuvwxyz-AA"
	realOAuth  = "sk-ant-oat01-REALOAUTH-" + "zyxwvutsrqponmlkjihgfedcba9876543210-zyxwvutsrqponmlkjihgfedcba9876543210-BB"
)

func credential(t *testing.T, name, host, header, value string) broker.Credential {
	t.Helper()
	s, err := broker.NewSentinel(name)
	if err != nil {
		t.Fatal(err)
	}
	return broker.Credential{Name: name, Sentinel: s, Value: value, Host: host, Header: header}
}

// serve runs h on a broker.NewServer on a loopback port and returns its
// base URL; the server is closed, and waited for, at cleanup.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := broker.NewServer(h, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// newAPI starts an API broker in front of upstream with creds.
func newAPI(t *testing.T, upstream string, creds []broker.Credential, onRequest func(broker.RequestInfo)) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	api, err := broker.NewAPI(broker.APIConfig{Upstream: u, Credentials: creds, OnRequest: onRequest})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, api)
}

// recorded is what an upstream saw of one request.
type recorded struct {
	method, path, query, host string
	header                    http.Header
}

// echoUpstream records each request and echoes its headers into response
// headers (X-Echo-*), a trailer and the body: an upstream that leaks.
func echoUpstream(t *testing.T) (*httptest.Server, <-chan recorded) {
	seen := make(chan recorded, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Host, r.Header.Clone()}
		for k, vv := range r.Header {
			w.Header()["X-Echo-"+k] = vv
		}
		w.Header().Set("Trailer", "X-Echo-Trailer")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(r.Header)
		w.Header().Set("X-Echo-Trailer", r.Header.Get("X-Api-Key")+" "+r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

func TestAPISwapsSentinelsAndScrubsEchoes(t *testing.T) {
	up, seen := echoUpstream(t)
	key := credential(t, "ANTHROPIC_API_KEY", "", "x-api-key", realAPIKey)
	oauth := credential(t, "CLAUDE_CODE_OAUTH_TOKEN", "", "Authorization", realOAuth)
	var infos []broker.RequestInfo
	var mu sync.Mutex
	base := newAPI(t, up.URL, []broker.Credential{key, oauth}, func(i broker.RequestInfo) {
		mu.Lock()
		infos = append(infos, i)
		mu.Unlock()
	})

	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	cases := []struct {
		name, header, value, want, brokered string
	}{
		{"api key", "X-Api-Key", key.Sentinel, realAPIKey, "ANTHROPIC_API_KEY"},
		{"oauth bearer", "Authorization", "Bearer " + oauth.Sentinel, "Bearer " + realOAuth, "CLAUDE_CODE_OAUTH_TOKEN"},
		{"basic", "Authorization", basic("x", key.Sentinel), basic("x", realAPIKey), "ANTHROPIC_API_KEY"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(`{"model":"m"}`))
			req.Header.Set(tc.header, tc.value)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := <-seen
			if v := got.header.Get(tc.header); v != tc.want {
				t.Errorf("upstream got %s %q, want the real value", tc.header, v)
			}
			// Everything the guest got: status line aside, headers,
			// trailers and body.
			var all strings.Builder
			resp.Header.Write(&all)
			resp.Trailer.Write(&all)
			all.Write(body)
			for _, real := range []string{realAPIKey, realOAuth, base64.StdEncoding.EncodeToString([]byte("x:" + realAPIKey))} {
				if strings.Contains(all.String(), real) {
					t.Fatalf("the guest's response holds a real value:\n%s", all.String())
				}
			}
			if v := resp.Header.Get("X-Echo-" + tc.header); v != tc.value {
				t.Errorf("echoed header reached the guest as %q, want the sentinel form %q", v, tc.value)
			}
			if !strings.Contains(string(body), "[scrubbed:") {
				t.Errorf("echoed body was not masked: %s", body)
			}
			if resp.Trailer.Get("X-Echo-Trailer") == "" {
				t.Errorf("trailer lost")
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(infos) != len(cases) {
		t.Fatalf("OnRequest called %d times, want %d", len(infos), len(cases))
	}
	for i, info := range infos {
		if info.Method != "POST" || info.Path != "/v1/messages" || info.Status != 200 ||
			info.RequestBytes != int64(len(`{"model":"m"}`)) || info.ResponseBytes == 0 ||
			len(info.Brokered) != 1 || info.Brokered[0] != cases[i].brokered {
			t.Errorf("RequestInfo %+v", info)
		}
	}
}

func TestAPIKeepsPathAndQueryAndNamesNoGuest(t *testing.T) {
	up, seen := echoUpstream(t)
	key := credential(t, "ANTHROPIC_API_KEY", "", "x-api-key", realAPIKey)
	base := newAPI(t, up.URL+"/base", []broker.Credential{key}, nil)

	req, _ := http.NewRequest("GET", base+"/v1/models?limit=5&after_id=a%2Fb", nil)
	req.Header.Set("X-Forwarded-For", "10.0.2.15")
	req.Header.Set("Forwarded", "for=10.0.2.15")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := <-seen
	if got.path != "/base/v1/models" || got.query != "limit=5&after_id=a%2Fb" {
		t.Errorf("upstream got path %q query %q", got.path, got.query)
	}
	if u, _ := url.Parse(up.URL); got.host != u.Host {
		t.Errorf("upstream got Host %q, want %q", got.host, u.Host)
	}
	for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip"} {
		if v, ok := got.header[h]; ok {
			t.Errorf("upstream got %s: %q", h, v)
		}
	}
	// No sentinel asked for: none added.
	if v := got.header.Get("X-Api-Key"); v != "" {
		t.Errorf("a request with no sentinel reached the upstream with x-api-key %q", v)
	}
}

// apiError decodes the Anthropic error shape.
func apiError(t *testing.T, resp *http.Response) (kind, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &e); err != nil || e.Type != "error" {
		t.Fatalf("not an Anthropic error body (%v): %s", err, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return e.Error.Type, e.Error.Message
}

func TestAPIRefusesUnknownSentinel(t *testing.T) {
	up, seen := echoUpstream(t)
	key := credential(t, "ANTHROPIC_API_KEY", "", "x-api-key", realAPIKey)
	base := newAPI(t, up.URL, []broker.Credential{key}, nil)
	other := credential(t, "OTHER", "", "", "some-other-value")

	req, _ := http.NewRequest("POST", base+"/v1/messages", nil)
	req.Header.Set("X-Api-Key", other.Sentinel)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	if kind, msg := apiError(t, resp); kind != "authentication_error" || !strings.Contains(msg, "placeholder") {
		t.Errorf("error %q: %q", kind, msg)
	}
	select {
	case r := <-seen:
		t.Errorf("the upstream was called for %s", r.path)
	default:
	}
}

func TestAPIUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	key := credential(t, "ANTHROPIC_API_KEY", "", "x-api-key", realAPIKey)
	base := newAPI(t, "http://"+addr, []broker.Credential{key}, nil)

	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("X-Api-Key", key.Sentinel)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	kind, msg := apiError(t, resp)
	if kind != "api_error" || !strings.HasPrefix(msg, "Sandbar could not reach http://"+addr+": ") {
		t.Errorf("error %q: %q", kind, msg)
	}
	if strings.Contains(msg, realAPIKey) {
		t.Errorf("error holds the secret")
	}
}

func TestAPIStreamsSSE(t *testing.T) {
	gotFirst := make(chan struct{})
	lastWritten := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(lastWritten)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		for i := 1; i <= 3; i++ {
			if i > 1 {
				// The model thinking: the pause between events is what
				// the test streams through, not a wait for something.
				time.Sleep(200 * time.Millisecond)
			}
			fmt.Fprintf(w, "event: n\ndata: {\"n\":%d}\n\n", i)
			rc.Flush()
			if i == 1 {
				select {
				case <-gotFirst:
				case <-time.After(10 * time.Second):
					t.Error("the guest did not get the first event while the upstream held the stream open: the broker buffers")
					return
				}
			}
		}
	}))
	t.Cleanup(up.Close)
	key := credential(t, "ANTHROPIC_API_KEY", "", "x-api-key", realAPIKey)
	base := newAPI(t, up.URL, []broker.Credential{key}, nil)

	resp, err := http.Get(base + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var events []string
	for len(events) < 3 {
		ev, err := readEvent(br)
		if err != nil {
			t.Fatalf("after %d events: %v", len(events), err)
		}
		events = append(events, ev)
		if len(events) == 1 {
			select {
			case <-lastWritten:
				t.Fatal("the first event arrived only after the last was written")
			default:
			}
			close(gotFirst)
		}
	}
	for i, ev := range events {
		if want := fmt.Sprintf("event: n\ndata: {\"n\":%d}\n", i+1); ev != want {
			t.Errorf("event %d = %q, want %q", i+1, ev, want)
		}
	}
}

// readEvent reads one SSE event, up to its blank line.
func readEvent(br *bufio.Reader) (string, error) {
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return ev.String(), err
		}
		if line == "\n" {
			return ev.String(), nil
		}
		ev.WriteString(line)
	}
}

// A value split across two flushed writes is still masked, and the bytes
// before it are not held back.
func TestAPIScrubsSecretSplitAcrossFlushes(t *testing.T) {
	gotFirst := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		io.WriteString(w, "data: first\n\n")
		rc.Flush()
		select {
		case <-gotFirst:
		case <-time.After(10 * time.Second):
			t.Error("the first event was held back")
			return
		}
		io.WriteString(w, "data: "+realAPIKey[:30])
		rc.Flush()
		io.WriteString(w, realAPIKey[30:]+"\n\n")
	}))
	t.Cleanup(up.Close)
	key := credential(t, "ANTHROPIC_API_KEY", "", "x-api-key", realAPIKey)
	base := newAPI(t, up.URL, []broker.Credential{key}, nil)

	resp, err := http.Get(base + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if ev, err := readEvent(br); err != nil || ev != "data: first\n" {
		t.Fatalf("first event %q, %v", ev, err)
	}
	close(gotFirst)
	rest, _ := io.ReadAll(br)
	if strings.Contains(string(rest), realAPIKey[:30]) || strings.Contains(string(rest), realAPIKey[30:]) {
		t.Fatalf("the secret reached the guest in pieces: %q", rest)
	}
	if len(rest) != len("data: ")+len(realAPIKey)+2 {
		t.Errorf("body length changed: %q", rest)
	}
}

func TestAPIStreamsLargeRequestBody(t *testing.T) {
	const size = 10 << 20
	const first = 1 << 20
	upstreamHasFirst := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		if _, err := io.CopyN(h, r.Body, first); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		close(upstreamHasFirst)
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintf(w, "%d %x", first+n, h.Sum(nil))
	}))
	t.Cleanup(up.Close)
	key := credential(t, "ANTHROPIC_API_KEY", "", "x-api-key", realAPIKey)
	base := newAPI(t, up.URL, []broker.Credential{key}, nil)

	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	sum := sha256.Sum256(data)
	pr, pw := io.Pipe()
	writeErr := make(chan error, 1)
	go func() {
		if _, err := pw.Write(data[:first]); err != nil {
			writeErr <- err
			return
		}
		select {
		case <-upstreamHasFirst:
		case <-time.After(10 * time.Second):
			pw.CloseWithError(fmt.Errorf("timed out"))
			writeErr <- fmt.Errorf("the upstream did not get the first MiB before the rest was sent: the broker buffers request bodies")
			return
		}
		_, err := pw.Write(data[first:])
		pw.CloseWithError(err)
		writeErr <- err
	}()
	req, _ := http.NewRequest("POST", base+"/v1/files", pr)
	req.Header.Set("X-Api-Key", key.Sentinel)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d %s", size, hex.EncodeToString(sum[:])); string(body) != want {
		t.Errorf("upstream got %q, want %q", body, want)
	}
}

func TestNewAPIRefusesCredentialBoundElsewhere(t *testing.T) {
	u, _ := url.Parse("https://api.anthropic.com")
	c := credential(t, "GITHUB_TOKEN", "github.com", "Authorization", "ghp_0123456789abcdefghijklmnopqrstuvwxyz")
	if _, err := broker.NewAPI(broker.APIConfig{Upstream: u, Credentials: []broker.Credential{c}}); err == nil {
		t.Fatal("NewAPI accepted a credential bound to another host")
	}
}

// TestAPISwapsOnlyInCredentialHeaders: the real key goes to the model API
// in the headers that carry credentials (x-api-key, Authorization), and
// nowhere else. An upstream echoes other headers in its errors ("Unexpected
// value(s) `...` for the `anthropic-beta` header"), and may change them on
// the way (lower-cased, cut, split at commas) where the scrubber, which
// knows the value's own bytes and base64, cannot find them.
func TestAPISwapsOnlyInCredentialHeaders(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"Unexpected value(s) %s for the anthropic-beta header"}}`,
			strings.ToLower(r.Header.Get("Anthropic-Beta")))
	}))
	defer up.Close()
	key := credential(t, "ANTHROPIC_API_KEY", "", "x-api-key", realAPIKey)
	base := newAPI(t, up.URL, []broker.Credential{key}, nil)
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", key.Sentinel)
	req.Header.Set("Anthropic-Beta", key.Sentinel)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), strings.ToLower(realAPIKey)) {
		t.Errorf("the guest read the key, lower-cased, in an echo of anthropic-beta: %s", body)
	}
	if !strings.Contains(string(body), key.Sentinel) {
		t.Errorf("anthropic-beta reached the upstream as something else than the placeholder: %s", body)
	}
}
