// Package hostproxy is the proxy the person's machine reaches the
// internet through, as Sandbar's own connections use it: the session
// network's outbound TCP (app/net/netstack), the credential broker's
// upstreams and Sandbar's own downloads. On Linux it is read from
// HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY; on macOS from the same
// variables when set, else from the system's proxy settings (CFNetwork,
// PAC included where the framework resolves it).
//
// It speaks HTTP CONNECT (with basic authentication from the URL's user)
// and SOCKS5. It is not a policy: the session's egress rules decide
// before anything is dialed, and a destination they refuse never reaches
// the proxy. It never reaches the guest, which needs no proxy settings.
package hostproxy
