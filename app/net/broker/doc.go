// Package broker is Sandbar's credential broker: it lets an agent in a
// session's VM use a secret (an Anthropic API key, an OAuth token, a GitHub
// token) without the secret ever entering the VM.
//
// The guest holds a sentinel instead of each brokered secret: a random
// string made by NewSentinel, "sandbar-brokered-" and 32 hex digits, that
// says nothing about the secret. The broker runs on the host, inside the
// session's userspace network, and swaps the sentinel for the real value
// as a request leaves for the one host that secret is bound to. On the way
// back it scrubs the real values out of what the upstream answers, so an
// upstream that echoes a credential cannot hand it to the guest.
//
// Two front ends share that core:
//
//   - API forwards the agent's plain-HTTP requests to the model API
//     (ANTHROPIC_BASE_URL points at the session's gateway). Every request
//     goes to the one configured upstream; the guest picks only the path.
//   - Interceptor terminates the guest's HTTPS connection to a host that a
//     secret is bound to (github.com for GITHUB_TOKEN) with a leaf from
//     Sandbar's per-install CA (LoadOrCreateCA), and forwards each request
//     over its own TLS connection to the real host, verified against real
//     roots.
//
// What this package is not: it makes no policy decisions (the network
// decides which connections reach it and which hosts may be dialled), it
// opens no listener of its own (the network hands it connections, or runs
// an http.Server made by NewServer), and it never stores a secret anywhere
// but in memory. It never logs, and never puts in an error, a header value:
// RequestInfo carries method, path, status, sizes and the names of the
// credentials used, nothing more.
//
// Limits, chosen for cost: sentinels are swapped in request header values
// only (never in the URL or the body); response bodies are scrubbed as they
// stream, but only in the clear (the broker asks upstreams for plain
// bodies; a body that still arrives compressed is passed as it is), and a
// value is found there as its own bytes or in base64, not in other
// encodings; protocol upgrades (WebSocket) are not passed on.
package broker
