package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/store"
)

// interleaved parses flags that may come before, between or after the
// positional arguments, which it returns.
func interleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseArgs(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// scopeFlags registers --project and --sandbar, which move a rule from
// the session to its project or to every session.
func scopeFlags(fs *flag.FlagSet) func() session.NetScope {
	project := fs.Bool("project", false, "for every session of the session's project (its settings)")
	all := fs.Bool("sandbar", false, "for every session (Sandbar's settings)")
	return func() session.NetScope {
		switch {
		case *all:
			return session.ScopeSandbar
		case *project:
			return session.ScopeProject
		}
		return session.ScopeSession
	}
}

const netUsage = `usage:
  sandbar net ID                          what the session's VM tried to reach, the latest first
  sandbar net ID allow TARGET [read|write] [--project | --sandbar]
  sandbar net ID deny TARGET [--project | --sandbar]
  sandbar net rules [--project PROJECT | --session ID] [--set FILE]
  sandbar net rules --defaults            the default allowlist: what every session reaches in allowlist mode
  sandbar net certs [on|off]              the certificates of this machine's that sessions trust

TARGET is HOST[:PORTS][/tcp|udp]: a name (example.com), *.example.com, an
address or a CIDR range ([::1] for IPv6); PORTS is a number, a range
(8000-8999) or *, 443 when left out. write lets pushes and publishes
through to a host allowed for reads only (the default registries and code
hosts); read lets only reads through. A rule takes effect at once, with
no restart: for the session alone, for every session of its project
(--project), or for every session (--sandbar). Host loopback and private
networks open only to a rule naming the exact address or name and port,
in Sandbar's or the project's settings.

rules prints Sandbar's network rules (or a project's, or a session's own),
one a line, as a .sandbar/network file holds them; --set replaces them
with a file's ("-" for standard input): mode allowlist|open|off, allow
and deny lines, "host NAME ADDRESS" to map a name for the sessions' DNS.
In allowlist mode the default allowlist applies besides them (rules
--defaults prints it), unless they say "defaults off".
`

func netCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar net")
	asJSON := fs.Bool("json", false, "print JSON")
	scope := scopeFlags(fs)
	fs.Usage = func() { fmt.Fprint(env.Stderr, netUsage) }
	if len(args) > 0 && args[0] == "rules" {
		return netRules(ctx, env, args[1:])
	}
	if len(args) > 0 && args[0] == "certs" {
		return netCerts(ctx, env, args[1:])
	}
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 1:
		return netAttempts(ctx, env, pos[0], *asJSON)
	case len(pos) == 3 && (pos[1] == "allow" || pos[1] == "deny"),
		len(pos) == 4 && pos[1] == "allow":
		e, err := sessions(ctx, env)
		if err != nil {
			return err
		}
		sc := scope()
		rule, err := e.AddNetRule(ctx, pos[0], sc, pos[1], strings.Join(pos[2:], " "))
		if err != nil {
			return err
		}
		where := map[session.NetScope]string{
			session.ScopeSession: "for session " + pos[0],
			session.ScopeProject: "for every session of session " + pos[0] + "'s project",
			session.ScopeSandbar: "for every session",
		}[sc]
		fmt.Fprintf(env.Stdout, "%s %s, from the next connection on\n", termsafe.Line(rule.String()), termsafe.Line(where))
		return nil
	}
	return UsageError{Msg: "sandbar net: give a session id, then nothing, allow TARGET [read|write] or deny TARGET (sandbar net -h)"}
}

func netAttempts(ctx context.Context, env *Env, ref string, asJSON bool) error {
	svc, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	s, err := svc.Get(ctx, ref)
	if err != nil {
		return err
	}
	as, err := svc.NetAttempts(ctx, s.ID)
	if err != nil {
		return err
	}
	if asJSON {
		if as == nil {
			as = []store.NetAttempt{}
		}
		return printJSON(env.Stdout, as)
	}
	if !s.Limits.Network {
		fmt.Fprintf(env.Stdout, "session %s runs without a network\n", s.ID)
	}
	if len(as) == 0 {
		fmt.Fprintf(env.Stdout, "session %s has tried no connection yet\n", s.ID)
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAST\tTIMES\tVERDICT\tDESTINATION\tWHY")
	for _, a := range as {
		verdict, why := "denied", a.Reason
		switch {
		case a.Allowed && a.Error != "":
			verdict, why = "failed", a.Error
		case a.Allowed:
			verdict, why = "allowed", ruleOrDash(a.Rule)
		case a.Proto == session.ProtoWrite:
			verdict = "refused"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", a.Last.Local().Format(time.TimeOnly), a.Count, verdict, termsafe.Line(attemptDest(a)), termsafe.Line(oneLine(why)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range as {
		if !a.Allowed && a.Proto != session.ProtoWrite && !session.ProxyRefused(a) {
			fmt.Fprintf(env.Stdout, "\nto allow a denied one for this session: sandbar net %s allow %s\n", termsafe.Line(ref), termsafe.Line(attemptDest(a)))
			break
		}
	}
	for _, a := range as {
		if r, err := session.WriteRule(a); a.Proto == session.ProtoWrite && err == nil {
			fmt.Fprintf(env.Stdout, "\nto allow writes to %s for this session: sandbar net %s %s\n", termsafe.Line(hostPort(a)), termsafe.Line(ref), termsafe.Line(r.String()))
			break
		}
	}
	return nil
}

// attemptDest is "host:port" with "/udp" for UDP, and " (write)" for a
// write refused on a read-only connection.
func attemptDest(a store.NetAttempt) string {
	d := hostPort(a)
	switch a.Proto {
	case "udp":
		d += "/udp"
	case session.ProtoWrite:
		d += " (write)"
	}
	return d
}

func hostPort(a store.NetAttempt) string {
	host := a.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(a.Port)
}

func ruleOrDash(r string) string {
	if r == "" {
		return "-"
	}
	return "by " + r
}

func netRules(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar net rules")
	project := fs.String("project", "", "a project's rules (id, name or path)")
	sessionID := fs.String("session", "", "a session's own rules")
	set := fs.String("set", "", "replace the rules with this file's (- for standard input)")
	defaults := fs.Bool("defaults", false, "print the default allowlist")
	fs.Usage = func() { fmt.Fprint(env.Stderr, netUsage) }
	if err := parse(fs, args); err != nil {
		return err
	}
	if *defaults {
		if *project != "" || *sessionID != "" || *set != "" {
			return UsageError{Msg: "sandbar net rules --defaults: the default allowlist is the same for every session; give it alone"}
		}
		fmt.Fprint(env.Stdout, policy.DefaultText())
		return nil
	}
	scope, ref := session.ScopeSandbar, ""
	switch {
	case *project != "" && *sessionID != "":
		return UsageError{Msg: "sandbar net rules: give --project or --session, not both"}
	case *project != "":
		scope, ref = session.ScopeProject, *project
	case *sessionID != "":
		scope, ref = session.ScopeSession, *sessionID
	}
	if *set == "" {
		svc, err := sessions(ctx, env)
		if err != nil {
			return err
		}
		text, err := svc.NetworkRules(ctx, scope, ref)
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) == "" {
			// Commented out, the list still reads as no rules to --set.
			fmt.Fprintf(env.Stdout, "# no %s network rules: only the default allowlist applies (sandbar net rules --defaults prints it plain):\n", scope)
			for _, l := range strings.Split(strings.TrimRight(policy.DefaultText(), "\n"), "\n") {
				if l != "" && !strings.HasPrefix(l, "#") {
					l = "#   " + l
				}
				fmt.Fprintln(env.Stdout, l)
			}
			return nil
		}
		// A project's rules may come from its repository, which the
		// agent's merged commits can change.
		fmt.Fprint(env.Stdout, termsafe.Text(text))
		if !strings.HasSuffix(text, "\n") {
			fmt.Fprintln(env.Stdout)
		}
		return nil
	}
	var r io.Reader = env.Stdin
	if *set != "-" {
		f, err := os.Open(*set)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return err
	}
	if len(b) > 1<<20 {
		return fmt.Errorf("%s is over 1 MiB: network rules are a few lines", *set)
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	if err := e.SetNetworkRules(ctx, scope, ref, string(b), 0); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s network rules replaced; running sessions follow them from their next connection\n", scope)
	return nil
}

const portsUsage = `usage:
  sandbar ports ID                        the session's published ports: 127.0.0.1:HOST → GUEST, and
                                          the address to open, http://ID.localhost:HOST/
  sandbar ports ID publish GUEST[:HOST]   publish a guest port (HOST: the port on this machine's 127.0.0.1)
  sandbar ports ID unpublish GUEST

Ports the guest listens on are published on their own, each on a free
port this machine picks (never the guest's number, where your own programs
connect); publish GUEST yourself to get the same number when it is free
(and not a well-known service's).

Open a port at http://ID.localhost:HOST/, an origin of the session's own:
at http://localhost:HOST/ your browser would send the guest the cookies of
every app you run on localhost (browsers keep cookies by name, not port).
`

func portsCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar ports")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() { fmt.Fprint(env.Stderr, portsUsage) }
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return UsageError{Msg: "sandbar ports: give a session id (sandbar ports -h)"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	id := pos[0]
	switch {
	case len(pos) == 1:
		ports, err := e.Ports(ctx, id)
		if err != nil {
			return err
		}
		if *asJSON {
			if ports == nil {
				ports = []netstack.Port{}
			}
			return printJSON(env.Stdout, ports)
		}
		if len(ports) == 0 {
			fmt.Fprintf(env.Stdout, "session %s publishes no port yet\n", id)
		}
		for _, p := range ports {
			fmt.Fprintf(env.Stdout, "%s  %s\n", p, p.URL)
		}
		return nil
	case len(pos) == 3 && pos[1] == "publish":
		g, h, err := parsePublish(pos[2])
		if err != nil {
			return err
		}
		p, err := e.PublishPort(ctx, id, g, h)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s  %s\n", p, p.URL)
		return nil
	case len(pos) == 3 && pos[1] == "unpublish":
		g, err := parsePort(pos[2])
		if err != nil {
			return err
		}
		if err := e.UnpublishPort(ctx, id, g); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "guest port %d no longer published\n", g)
		return nil
	}
	return UsageError{Msg: "sandbar ports: give a session id, then nothing, publish GUEST[:HOST] or unpublish GUEST (sandbar ports -h)"}
}

func parsePublish(s string) (guest, host uint16, err error) {
	g, h, ok := strings.Cut(s, ":")
	if guest, err = parsePort(g); err != nil {
		return 0, 0, err
	}
	if ok {
		if host, err = parsePort(h); err != nil {
			return 0, 0, err
		}
	}
	return guest, host, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, UsageError{Msg: fmt.Sprintf("%q is not a port: give a number from 1 to 65535", s)}
	}
	return uint16(n), nil
}

func projectSecrets(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar project secrets")
	clear := fs.Bool("clear", false, "give the project's sessions no secret but the model API's")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar project secrets PROJECT [NAME...] [--clear]\n\nWith names, the project's sessions get those secrets (besides the model API's\ncredential, which Sandbar's broker keeps out of the VM); without, lists them.")
	}
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return UsageError{Msg: "sandbar project secrets: give a project (id, name or path)"}
	}
	m, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	if len(pos) > 1 || *clear {
		if err := m.SetProjectSecrets(ctx, pos[0], pos[1:]); err != nil {
			return err
		}
	}
	names, err := projectSecretNames(ctx, m, pos[0])
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintln(env.Stdout, "the project's sessions get no secret but the model API's credential (brokered: it never enters the VM)")
		return nil
	}
	fmt.Fprintf(env.Stdout, "the project's sessions get: %s (and the model API's credential, brokered)\n", strings.Join(names, ", "))
	return nil
}

func projectSecretNames(ctx context.Context, m session.Service, ref string) ([]string, error) {
	proj, err := m.FindProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	return m.ProjectSecrets(ctx, proj.ID)
}
