// Package policy decides which outbound connections a session's guest may
// open. It reads the network rules a person writes (in Sandbar's
// settings, a project's settings, a repository's .sandbar/network file or
// on the command line), composes them with Sandbar's default allowlist
// into one immutable Policy per session, and answers, for each connection
// the guest asks for, allow or deny with a reason a person can act on.
//
// It is pure data and logic. It does no I/O beyond parsing the bytes
// given to it: it does not read files, resolve names, open or watch
// connections, or know anything of VMs, DNS servers or proxies. The parts
// that do call Decide and enforce its answer. It treats the agent in the
// guest as hostile: every name and address is checked and canonicalised
// before it is compared, and what cannot be read is denied.
//
// # Syntax
//
// One line per rule; # starts a comment; blank lines are ignored; spaces
// and tabs separate words; keywords are read in any case; a line ends at
// LF or CRLF.
//
//	mode allowlist|open|off
//	allow HOST[:PORTS][/PROTO] [read|write]
//	deny  HOST[:PORTS][/PROTO]
//	host  NAME ADDRESS   # Sandbar's DNS answers NAME with ADDRESS in this session
//	defaults off         # leave out the default allowlist (rarely wanted)
//
// HOST is one of:
//
//	example.com          a DNS name: that name only
//	*.example.com        every subdomain of example.com at any depth, not example.com itself
//	*                    any name or address
//	203.0.113.7          an IPv4 address
//	10.0.0.0/8           an IPv4 range (CIDR), with no bits set past the prefix
//	[2001:db8::1]        an IPv6 address, always in brackets
//	[fd00::/8]           an IPv6 range, the whole CIDR in brackets
//
// Names are compared without regard to case and with a trailing dot
// dropped. A name is labels of 1 to 63 letters, digits, "-" or "_" (not
// starting or ending with "-"), at most 253 characters, in ASCII:
// international names are written in punycode (xn--...). A name whose
// last label is a number (0177.0.0.1, 127.1, 0x7f.1, 2130706433) is
// refused, because resolvers read it as an IPv4 address. An IPv4 address
// written in IPv6 ([::ffff:10.0.0.1]) is the IPv4 address.
//
// PORTS follows a colon: a port 1-65535, a range 8000-8999, or * for
// every port. Without it the rule is for port 443. An IPv6 host takes its
// port after the bracket, so it cannot be read as part of the address:
//
//	allow example.com:8000-8999
//	allow 10.0.0.0/8:5432
//	allow [fd00::/8]:22
//	deny  *:25
//
// PROTO follows a slash: tcp (the default) or udp.
//
//	allow time.example.com:123/udp
//	allow 10.0.0.0/8:*/udp
//
// An allow rule may end in read or write (tcp only). read lets only
// HTTP reads through the connections it allows: GET, HEAD, OPTIONS, git's
// fetch and the read APIs of package clients; the network reads each
// request (terminating TLS with Sandbar's CA, which the guest trusts) and
// refuses the rest with 403. write, or no word, lets anything through.
// The default allowlist's registries and code hosts are read.
//
//	allow github.com read
//	allow registry.example write
//
// ADDRESS in a host line is an IPv4 or IPv6 address, IPv6 with or without
// brackets. Each source holds at most 1 MiB of text and 10,000 allow, deny
// and host lines, and a line at most 4 KiB. A source with any bad line is
// refused whole, each error naming the line, its text, what is wrong and
// what to write instead:
//
//	line 3: "allow exa mple.com": a host has no spaces: write allow HOST[:PORTS][/tcp|udp]
//
// # Sources and composing
//
// Compose builds a session's Policy from layers, each from one Source:
// Sandbar's settings, the project's, the repository's .sandbar/network,
// and the rules the person allowed for this session. Decide reads the
// rules in that order, after the default allowlist (Defaults).
//
//   - The mode is the session's own choice if it has one (--no-network is
//     off); else the project's mode line; else Sandbar's; else allowlist.
//     The repository's mode off or allowlist then applies if it is
//     narrower; its mode open is ignored with a note.
//   - "defaults off" in Sandbar's or the project's settings leaves out
//     the default allowlist. In .sandbar/network it does too, as it only
//     narrows.
//   - Host lines count from Sandbar's and the project's settings, the
//     project's winning for a name both map. The repository's and the
//     session's are ignored with a note.
//   - The repository may add deny rules and allow rules for public hosts.
//     Its "allow *" and its allows of a whole top-level domain
//     ("allow *.com") are ignored with a note: they would be mode open by
//     another name.
//   - The session's rules are allows and denies only; a mode, host or
//     defaults line there is ignored with a note.
//
// # Deciding
//
// The network calls Decide twice for a connection to a name the guest
// looked up through Sandbar's DNS: once with the name alone, before
// resolving it on the host (so the network need not send a name that is
// not allowed to a resolver), and again with the name and the address it
// resolved to. The second call is the final word: it is what catches a
// name that resolves to loopback (DNS rebinding). A connection to an IP
// literal is decided once, with the address alone.
//
// A destination that cannot be read is denied first: a name that is not a
// DNS name (or that resolvers read as IPv4), an IP literal as the name
// that is not the address connected to, port 0, a protocol other than tcp
// or udp. Then, in order:
//
//  1. Mode off denies everything: "the session's network is off".
//  2. A deny rule that matches denies, whatever allows it, in every mode:
//     denied by "deny example.com" in the project's settings.
//  3. An address closed to sessions (see Forbidden: loopback, private
//     networks, link-local and cloud metadata, CGNAT, multicast, Sandbar's
//     DNS answer range, and the like) is allowed only by an allow rule
//     from Sandbar's, the project's or the session's rules that is either
//     an address or range holding it (allow 10.0.0.5:5432), or the exact
//     name (no wildcard, not *) with its port written out, where a host
//     line of Sandbar's or the project's settings maps that name to that
//     very address, with the port and protocol matching. A name rule
//     never opens what the name's DNS answers: "Allow" adds name rules
//     for names the guest chose, whose DNS answers are not the person's
//     (to reach db.internal at 10.0.0.5, allow db.internal:5432 and
//     10.0.0.5:5432). The default allowlist, the repository and mode open
//     never open one. The reason says which range it is and what to add.
//  4. Mode open allows everything else.
//  5. Mode allowlist allows what an allow rule matches, and denies the
//     rest: example.com:443 (tcp) is not in the session's allowlist.
//
// Among the allow rules that match, the first decides, except that a
// read rule gives way to a later one that lets anything through from
// Sandbar's, the project's or the session's rules ("Allow writes for this
// session" adds "allow HOST:PORT write"). A repository's rules never widen
// a read rule, so a merged "allow github.com" cannot reopen pushes.
// Decision.ReadOnly says the deciding rule is read. Mode open allows
// everything, writes included.
//
// A rule matches when the port is in its range, the protocol is the same,
// and the host matches: a name rule (exact or wildcard) the name, an
// address rule the address, * either. So a name rule never matches an IP
// literal, and an address rule never lets a name be looked up: to reach
// a name, allow the name. A name mapped by a host line is judged with its
// mapped address from the first call. A deny of an IPv4 address also
// matches it inside a NAT64 or 6to4 address. IPv4 written in IPv6 is
// unmapped, and zones dropped, before any comparison.
package policy
