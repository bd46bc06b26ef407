package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
)

const netCertsUsage = `usage:
  sandbar net certs [--json]     the certificates this machine trusts that sessions carry
  sandbar net certs on|off       carry them into new sessions, or not

Sessions trust what this machine trusts beyond the stock bundle (a
company's TLS-inspecting proxy, a private CA): on Linux the certificates
in /usr/local/share/ca-certificates and any the system bundle holds beyond
the ca-certificates package's own; on macOS those the System and login
keychains trust for SSL. Only certificates travel, never a private key.
On unless turned off; a change applies from the next start.
`

func netCerts(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar net certs")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() { fmt.Fprint(env.Stderr, netCertsUsage) }
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if env.Manager == nil {
		return fmt.Errorf("sandbar net certs: no session manager is wired into this sandbar")
	}
	m, err := env.Manager(ctx)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 1 && (pos[0] == "on" || pos[0] == "off"):
		if err := m.SetHostCertsOn(ctx, pos[0] == "on"); err != nil {
			return err
		}
		if pos[0] == "on" {
			fmt.Fprintln(env.Stdout, "this machine's certificates are carried into sessions, from the next start")
		} else {
			fmt.Fprintln(env.Stdout, "this machine's certificates are no longer carried into sessions, from the next start")
		}
		return nil
	case len(pos) != 0:
		return UsageError{Msg: "sandbar net certs: give nothing, on or off (sandbar net certs -h)"}
	}
	hc, err := m.HostCerts(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		type cert struct {
			Subject string `json:"subject"`
			SHA256  string `json:"sha256"`
			From    string `json:"from"`
		}
		type skipped struct {
			From   string `json:"from"`
			Reason string `json:"reason"`
		}
		out := struct {
			On      bool      `json:"on"`
			Certs   []cert    `json:"certs"`
			Skipped []skipped `json:"skipped"`
		}{On: hc.On, Certs: []cert{}, Skipped: []skipped{}}
		for _, c := range hc.Certs {
			out.Certs = append(out.Certs, cert{c.Subject, c.SHA256, c.From})
		}
		for _, s := range hc.Skipped {
			out.Skipped = append(out.Skipped, skipped{s.From, s.Reason})
		}
		return printJSON(env.Stdout, out)
	}
	switch {
	case !hc.On:
		fmt.Fprintf(env.Stdout, "off: sessions do not carry the %d certificates this machine trusts beyond the stock bundle (turn on: sandbar net certs on)\n", len(hc.Certs))
	case len(hc.Certs) == 0:
		fmt.Fprintln(env.Stdout, "on: this machine trusts no certificate beyond the stock bundle; sessions carry none")
	default:
		fmt.Fprintf(env.Stdout, "on: sessions carry the %d certificates this machine trusts beyond the stock bundle (turn off: sandbar net certs off)\n", len(hc.Certs))
	}
	if len(hc.Certs) > 0 {
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SUBJECT\tSHA-256\tFROM")
		for _, c := range hc.Certs {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Subject, c.SHA256, c.From)
		}
		tw.Flush()
	}
	for _, s := range hc.Skipped {
		fmt.Fprintf(env.Stdout, "not carried: %s\n", s)
	}
	return nil
}
