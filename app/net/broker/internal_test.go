package broker

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const testValue = "ghp_REALTOKEN0123456789abcdefghijklmnopqrstuv"

func testCred(t *testing.T, name, host, header, value string) Credential {
	t.Helper()
	s, err := NewSentinel(name)
	if err != nil {
		t.Fatal(err)
	}
	return Credential{Name: name, Sentinel: s, Value: value, Host: host, Header: header}
}

func TestNewSentinel(t *testing.T) {
	a, err := NewSentinel("A")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSentinel("A")
	if !isSentinel(a) || !isSentinel(b) || a == b {
		t.Errorf("sentinels %q and %q", a, b)
	}
	for _, s := range []string{"", sentinelPrefix, a + "0", a[:len(a)-1], strings.ToUpper(a)} {
		if isSentinel(s) {
			t.Errorf("isSentinel(%q) = true", s)
		}
	}
}

func TestSwap(t *testing.T) {
	gh := testCred(t, "GITHUB_TOKEN", "github.com", "Authorization", testValue)
	other := testCred(t, "NPM_TOKEN", "registry.example", "Authorization", "npm_0123456789abcdefghij")
	stranger, _ := NewSentinel("STRANGER")
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }

	cases := []struct {
		name          string
		strict        bool
		header, value string
		want          string
		wantErr       bool
		wantUsed      bool
	}{
		{"bearer", false, "Authorization", "Bearer " + gh.Sentinel, "Bearer " + testValue, false, true},
		{"token scheme", false, "Authorization", "token " + gh.Sentinel, "token " + testValue, false, true},
		{"basic", false, "Authorization", basic("x-access-token:" + gh.Sentinel), basic("x-access-token:" + testValue), false, true},
		{"basic lower-case scheme", false, "Authorization", "basic " + base64.StdEncoding.EncodeToString([]byte("u:"+gh.Sentinel)), "basic " + base64.StdEncoding.EncodeToString([]byte("u:"+testValue)), false, true},
		{"another header", false, "X-Token", gh.Sentinel, gh.Sentinel, false, false},
		{"bound elsewhere", false, "Authorization", "Bearer " + other.Sentinel, "Bearer " + other.Sentinel, false, false},
		{"bound elsewhere, basic", false, "Authorization", basic("u:" + other.Sentinel), basic("u:" + other.Sentinel), false, false},
		{"stranger, lenient", false, "Authorization", "Bearer " + stranger, "Bearer " + stranger, false, false},
		{"stranger, strict", true, "Authorization", "Bearer " + stranger, "", true, false},
		{"stranger in basic, strict", true, "Authorization", basic("u:" + stranger), "", true, false},
		{"truncated token, strict", true, "Authorization", "Bearer " + stranger[:30], "", true, false},
		{"no sentinel", true, "Authorization", "Bearer abc", "Bearer abc", false, false},
		{"not base64", true, "Authorization", "Basic !!!", "Basic !!!", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSwapper([]Credential{gh, other}, "github.com", false, tc.strict)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{tc.header: {tc.value}, "Accept": {"*/*"}}
			used, err := s.swap(h)
			if tc.wantErr {
				if !errors.Is(err, errUnknownSentinel) {
					t.Fatalf("err %v, want errUnknownSentinel", err)
				}
				if h.Get(tc.header) != tc.value {
					t.Errorf("a refused request was changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Get(tc.header); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if (len(used) == 1 && used[0] == "GITHUB_TOKEN") != tc.wantUsed {
				t.Errorf("used %v", used)
			}
		})
	}
}

func TestBase64CoreIsInEveryEncoding(t *testing.T) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		for pre := range 7 {
			for post := range 4 {
				text := strings.Repeat("\xfb", pre) + testValue + strings.Repeat("\xff", post)
				e := enc.EncodeToString([]byte(text))
				core := base64Core(enc, testValue, pre%3)
				if len(core) < len(testValue) || !strings.Contains(e, core) {
					t.Errorf("prefix %d, suffix %d: core %q not in %q", pre, post, core, e)
				}
			}
		}
	}
}

// chunkReader returns its data n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[n:]
	return n, nil
}

func (c *chunkReader) Close() error { return nil }

func TestScrubReaderAnySplit(t *testing.T) {
	c := testCred(t, "GITHUB_TOKEN", "github.com", "Authorization", testValue)
	s := newScrubber([]Credential{c})
	b64 := base64.StdEncoding.EncodeToString([]byte("x:" + testValue))
	in := "start " + testValue + " mid " + testValue + testValue + " b64 " + b64 + " end " + testValue[:20]
	mask := string(maskFor(c.Name, len(testValue)))
	b64Mask := string(maskFor(c.Name, len(base64Core(base64.StdEncoding, testValue, 2))))
	want := "start " + mask + " mid " + mask + mask + " b64 " +
		strings.Replace(b64, base64Core(base64.StdEncoding, testValue, 2), b64Mask, 1) + " end " + testValue[:20]
	for n := 1; n <= len(in); n++ {
		got, err := io.ReadAll(newScrubReader(&chunkReader{data: []byte(in), n: n}, s))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("chunks of %d:\n got %q\nwant %q", n, got, want)
		}
	}
}

// pipeSource hands over what is sent on ch, one send per Read, and blocks
// in between like an upstream waiting for the model.
type pipeSource chan string

func (p pipeSource) Read(b []byte) (int, error) {
	s, ok := <-p
	if !ok {
		return 0, io.EOF
	}
	return copy(b, s), nil
}

func (p pipeSource) Close() error { return nil }

// An event is passed on by the Read that brought it; only bytes that might
// begin a secret wait for the next.
func TestScrubReaderHoldsBackOnlyAPrefix(t *testing.T) {
	c := testCred(t, "GITHUB_TOKEN", "github.com", "Authorization", testValue)
	src := make(pipeSource, 4)
	r := newScrubReader(src, newScrubber([]Credential{c}))
	read := func(want string) {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			b := make([]byte, 1024)
			n, _ := r.Read(b)
			got <- string(b[:n])
		}()
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("read %q, want %q", g, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("read of %q blocked", want)
		}
	}
	src <- "data: one\n\n"
	read("data: one\n\n")
	src <- "data: " + testValue[:10] // its end might begin the secret
	read("data: ")
	src <- "XYZ\n\n" // it did not
	read(testValue[:10] + "XYZ\n\n")
	close(src)
	if n, err := r.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("at the end: %d, %v", n, err)
	}
}

func TestScrubHeaders(t *testing.T) {
	c := testCred(t, "GITHUB_TOKEN", "github.com", "Authorization", testValue)
	s := newScrubber([]Credential{c})
	h := http.Header{
		"X-Echo":    {"token " + testValue},
		"X-Basic":   {"Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+testValue))},
		"X-Blob":    {"eyJ" + base64.RawURLEncoding.EncodeToString([]byte(`{"t":"`+testValue+`"}`))},
		"X-Nothing": {"plain"},
	}
	s.header(h)
	if got := h.Get("X-Echo"); got != "token "+c.Sentinel {
		t.Errorf("X-Echo %q", got)
	}
	if got := h.Get("X-Basic"); got != "Basic "+base64.StdEncoding.EncodeToString([]byte("u:"+c.Sentinel)) {
		t.Errorf("X-Basic %q", got)
	}
	if got := h.Get("X-Blob"); !strings.Contains(got, "[scrubbed:") {
		t.Errorf("X-Blob %q", got)
	}
	if got := h.Get("X-Nothing"); got != "plain" {
		t.Errorf("X-Nothing %q", got)
	}
}

func TestLeafCacheIsBounded(t *testing.T) {
	ca, _, err := newCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ca.Certificate("h0.test")
	for i := range leafCached + 10 {
		if _, err := ca.Certificate(fmt.Sprintf("h%d.test", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ca.leaves); n != leafCached || ca.order.Len() != leafCached {
		t.Errorf("cache holds %d (%d), want %d", n, ca.order.Len(), leafCached)
	}
	if again, _ := ca.Certificate("h0.test"); again == first {
		t.Errorf("the oldest leaf was not evicted")
	}
}
