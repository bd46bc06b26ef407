package broker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// A read-only host (policy's "allow HOST read", the default allowlist's
// registries and code hosts) is reached through the Interceptor, which
// reads each request and lets only reads go on: a push or a publish made
// with a token the agent brought is answered 403 (Target.ReadOnly).

// maxLFSBatch bounds the git-lfs batch request read to learn whether it
// asks to download: git-lfs asks for 100 objects at a time, a few KiB.
const maxLFSBatch = 1 << 20

// npmAuditPaths are npm's audit endpoints. npm install POSTs the project's
// package names and versions there; the answer is advisories, and nothing
// is stored for anyone to fetch back, so they are reads.
var npmAuditPaths = []string{
	"/-/npm/v1/security/advisories/bulk",
	"/-/npm/v1/security/audits/quick",
	"/-/npm/v1/security/audits",
}

// IsRead reports whether r only reads from the host it is for:
//
//   - GET, HEAD and OPTIONS, except git's push discovery
//     (GET .../info/refs?service=git-receive-pack);
//   - git's fetch: POST .../git-upload-pack, of git's content type, with
//     no query and no API route (see gitRoute);
//   - npm's audit: POST /-/npm/v1/security/advisories/bulk, .../audits/quick
//     and .../audits;
//   - a git-lfs batch request (POST .../info/lfs/objects/batch, of
//     git-lfs's content type, shaped as gitRoute says) whose JSON body
//     says "operation": "download", once, in that case. Its body, at most 1 MiB, is read
//     for that and put back in r; a larger or unreadable one is not a read.
//
// Anything else (PUT, POST, PATCH, DELETE: a push, a publish, an upload)
// is not. The reason says, when it is not a read, what the request is.
func IsRead(r *http.Request) (bool, string) {
	path := r.URL.Path
	for _, h := range methodOverrides {
		if r.Header.Get(h) != "" {
			// A server may take the method from it: the request is
			// what it says it is, or nothing.
			return false, r.Method + " request with " + h
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if r.URL.Query().Get("service") == "git-receive-pack" {
			return false, "git push"
		}
		return true, ""
	case http.MethodPost:
		switch {
		case strings.HasSuffix(path, "/git-receive-pack"):
			return false, "git push"
		case isNPMAudit(path):
			return true, ""
		case gitRoute(r, "/git-upload-pack", "application/x-git-upload-pack-request"):
			return true, ""
		case gitRoute(r, "/info/lfs/objects/batch", "application/vnd.git-lfs+json"):
			return lfsDownload(r)
		}
	}
	return false, r.Method + " request"
}

// methodOverrides are headers some servers take the real method from.
var methodOverrides = []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}

// gitRoute reports whether r has the shape of git's own request to end
// (git's fetch, git-lfs's batch): its path ends with end, names no API
// (a REST route such as GitLab's /api/v4/projects/P/repository/files/F
// can end with a name the agent chose, and would write), hides no slash
// in an escape, has no query (git sends none; a REST API reads its
// parameters there), and its body is of git's content type, which no
// form or JSON API parses.
func gitRoute(r *http.Request, end, contentType string) bool {
	path := r.URL.Path
	if !strings.HasSuffix(path, end) || r.URL.RawQuery != "" {
		return false
	}
	if strings.Contains(strings.ToLower(r.URL.EscapedPath()), "%2f") || strings.HasPrefix(path, "/api/") || strings.Contains(path, "/-/") {
		return false
	}
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), contentType)
}

func isNPMAudit(path string) bool {
	for _, p := range npmAuditPaths {
		if path == p {
			return true
		}
	}
	return false
}

// lfsDownload reads a git-lfs batch request's body (bounded) and says
// whether it asks to download; the body is put back for the upstream.
func lfsDownload(r *http.Request) (bool, string) {
	if r.Body == nil || r.Body == http.NoBody {
		return false, "git-lfs batch request without a body"
	}
	if r.ContentLength > maxLFSBatch {
		return false, fmt.Sprintf("git-lfs batch request of %d bytes (Sandbar reads at most %d to see whether it downloads)", r.ContentLength, maxLFSBatch)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxLFSBatch+1))
	if err != nil {
		return false, "git-lfs batch request whose body could not be read"
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	if len(b) > maxLFSBatch {
		return false, fmt.Sprintf("git-lfs batch request over %d bytes (Sandbar reads at most that to see whether it downloads)", maxLFSBatch)
	}
	// Keys as written: Go's decoder matches names without case and keeps
	// the last of twins, where the server may read another.
	var req map[string]json.RawMessage
	if err := json.Unmarshal(b, &req); err != nil {
		return false, "git-lfs batch request that is not JSON"
	}
	seen := 0
	for k := range req {
		if strings.EqualFold(k, "operation") {
			seen++
		}
	}
	if seen != 1 || string(req["operation"]) != `"download"` || bytes.Count(b, []byte(`"operation"`)) != 1 {
		return false, "git-lfs upload"
	}
	return true, ""
}

// refuseWrite answers a write to a read-only host: 403, in plain text a
// person reads in git's "remote:" lines, npm's error or curl's output.
func refuseWrite(w http.ResponseWriter, host, what, method, path, howTo string) {
	msg := fmt.Sprintf("Sandbar: writes are not allowed to %s from this session (%s: %s %s). "+
		"Sandbar lets the session only read from %s, so an agent cannot push or publish there.", host, what, method, path, host)
	if howTo != "" {
		msg += " To allow writes for this session: " + howTo
	}
	writeTextError(w, http.StatusForbidden, "", msg)
}

// tlsRecordHandshake is the first byte of a TLS connection (a handshake
// record); a plain HTTP request starts with a method's letter.
const tlsRecordHandshake = 0x16

// sniffConn gives back the bytes a bufio.Reader peeked before reading on.
type sniffConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *sniffConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// sniff reads the first byte of a guest connection: whether it starts a
// TLS handshake, and the connection that replays it.
func sniff(c net.Conn) (net.Conn, bool, error) {
	br := bufio.NewReaderSize(c, 4096)
	b, err := br.Peek(1)
	if err != nil {
		return nil, false, err
	}
	return &sniffConn{Conn: c, r: br}, b[0] == tlsRecordHandshake, nil
}
