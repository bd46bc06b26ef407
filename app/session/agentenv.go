package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"sandbar/app/net/broker"
	"sandbar/app/net/policy"
	"sandbar/app/secrets"
	"sandbar/app/store"
)

// agentSetup is what a session's agent gets from the keyring: its
// environment, where each brokered secret is a sentinel, and the
// broker's side of those secrets, which never leaves this process.
type agentSetup struct {
	// env is what enters the VM.
	env map[string]string
	// values are every secret read, by name: what the redactor hides.
	values      map[string]string
	creds       netCredentials
	upstream    *url.URL
	interceptor *broker.Interceptor
	// caPEM is the certificates the guest trusts beyond its own: Sandbar's
	// CA when a secret is brokered over HTTPS, and this machine's (see
	// hostcerts.go); "" when neither.
	caPEM string
	// notes are warnings for the session's log.
	notes []string
}

// agentSetup reads the secrets a session of project gets: the model
// API's credential (always, brokered) and the secrets the project lists.
// Claude Code needs one of the model API's credentials; a secret the
// project lists that is not set is a warning, not a refusal.
func (m *Manager) agentSetup(ctx context.Context, agent AgentSpec, projectID int64) (*agentSetup, error) {
	upstream, err := m.anthropicUpstream(ctx)
	if err != nil {
		return nil, err
	}
	a := &agentSetup{env: map[string]string{}, values: map[string]string{}, upstream: upstream}
	if m.cfg.Secrets != nil {
		recorded, err := m.cfg.Secrets.Names(ctx)
		if err != nil {
			return nil, err
		}
		listed, err := m.ProjectSecrets(ctx, projectID)
		if err != nil {
			return nil, err
		}
		var wanted []string
		for _, n := range slices.Sorted(maps.Keys(modelCredentials)) {
			if slices.Contains(recorded, n) {
				wanted = append(wanted, n)
			}
		}
		for _, n := range listed {
			switch {
			case slices.Contains(wanted, n):
			case !slices.Contains(recorded, n):
				a.notes = append(a.notes, fmt.Sprintf("the project lists the secret %s, which is not set: set it with `sandbar secrets set %s` (the session runs without it)", n, n))
			default:
				wanted = append(wanted, n)
			}
		}
		for _, n := range wanted {
			v, err := m.cfg.Secrets.Env(ctx, []string{n})
			switch {
			case errors.Is(err, secrets.ErrNotFound):
				a.notes = append(a.notes, fmt.Sprintf("the secret %s is recorded but gone from the keyring: set it again with `sandbar secrets set %s`", n, n))
			case err != nil:
				return nil, err
			default:
				a.values[n] = v[n]
			}
		}
	}
	if agent.Claude() && a.values["ANTHROPIC_API_KEY"] == "" && a.values["CLAUDE_CODE_OAUTH_TOKEN"] == "" {
		return nil, fmt.Errorf("Claude Code needs ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN: set one with `sandbar secrets set ANTHROPIC_API_KEY` (or in Settings): %w", ErrNoCredentials)
	}
	maps.Copy(a.env, a.values)
	if a.creds, err = m.brokered(ctx, a.env, upstream); err != nil {
		return nil, err
	}
	// The CA serves the secrets bound to hosts and the hosts allowed for
	// reads only (the default allowlist's registries and code hosts),
	// whose requests the broker reads. Without it the first cannot be
	// brokered, so the session does not start; the second are closed.
	var ca *broker.CA
	if m.cfg.CAStore != nil {
		ca, err = broker.LoadOrCreateCA(ctx, m.cfg.CAStore)
	}
	switch {
	case len(a.creds.intercept) > 0 && m.cfg.CAStore == nil:
		return nil, fmt.Errorf("secrets bound to hosts (%s) need Sandbar's CA in the keyring, which this Sandbar cannot reach: %w", credNames(a.creds.intercept), ErrBadOptions)
	case len(a.creds.intercept) > 0 && err != nil:
		return nil, fmt.Errorf("Sandbar's CA for brokered HTTPS: %w", err)
	case err != nil:
		a.notes = append(a.notes, fmt.Sprintf("Sandbar's CA is not at hand (%v): the hosts allowed for reads only, among them the default registries and code hosts, are closed to this session", err))
	case ca != nil:
		a.caPEM = string(ca.CertPEM())
		a.interceptor = &broker.Interceptor{CA: ca, Credentials: a.creds.intercept, RootCAs: m.cfg.UpstreamRoots, Logger: m.log}
	}
	m.hostCAs(ctx, a)
	return a, nil
}

func credNames(cs []broker.Credential) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// FindProject finds a project by id, name or path.
func (m *Manager) FindProject(ctx context.Context, ref string) (store.Project, error) {
	return m.findProject(ctx, ref)
}

// ProjectSecrets returns the names of the secrets a project's sessions
// get besides the model API's credential.
func (m *Manager) ProjectSecrets(ctx context.Context, projectID int64) ([]string, error) {
	v, _, err := m.cfg.Store.ProjectSetting(ctx, projectID, store.ProjectSecrets)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range strings.Fields(v) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// SetProjectSecrets chooses the secrets a project's sessions get besides
// the model API's credential. Every name must be a recorded secret; an
// unknown one is refused and nothing changes.
func (m *Manager) SetProjectSecrets(ctx context.Context, ref string, names []string) error {
	p, err := m.findProject(ctx, ref)
	if err != nil {
		return err
	}
	var recorded []string
	if m.cfg.Secrets != nil {
		if recorded, err = m.cfg.Secrets.Names(ctx); err != nil {
			return err
		}
	}
	var unknown, keep []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case n == "" || slices.Contains(keep, n):
		case !slices.Contains(recorded, n):
			unknown = append(unknown, n)
		default:
			keep = append(keep, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("no secret named %s: set it first with `sandbar secrets set NAME` (`sandbar secrets ls` lists them); nothing changed: %w", strings.Join(unknown, ", "), ErrBadOptions)
	}
	if len(keep) == 0 {
		return m.cfg.Store.DeleteProjectSetting(ctx, p.ID, store.ProjectSecrets)
	}
	return m.cfg.Store.SetProjectSetting(ctx, p.ID, store.ProjectSecrets, strings.Join(keep, "\n"))
}

// netMode is the store's record of the session's explicit network mode.
func netMode(o Options) string {
	switch {
	case o.NoNetwork || o.Network == NetworkOff:
		return ""
	}
	return o.Network
}

// ModelCredential reports whether name is one of the model API's
// credentials, which are always brokered.
func ModelCredential(name string) bool {
	_, ok := modelCredentials[name]
	return ok
}

// SecretBinding checks where a secret is to be brokered: host, a DNS name,
// is the only host its requests may carry it to, in header (default
// Authorization). The model API's credentials are always brokered to the
// model API and cannot be bound elsewhere.
func SecretBinding(name, host, header string) (store.SecretBroker, error) {
	if _, ok := modelCredentials[name]; ok {
		return store.SecretBroker{}, fmt.Errorf("%s is always brokered to the model API: it takes no host: %w", name, ErrBadOptions)
	}
	host = strings.ToLower(strings.TrimSpace(host))
	name, port := brokerTarget(host)
	name = strings.TrimSuffix(name, ".")
	r, err := policy.ParseRule(fmt.Sprintf("allow %s:%d", name, port), policy.SourceSandbar)
	if err != nil || r.Wildcard || r.Prefix.IsValid() || r.Host != name || port == 0 {
		return store.SecretBroker{}, fmt.Errorf("%q is not a host name: give the one host the secret may go to, like github.com (or github.example:8443 for a port other than 443): %w", host, ErrBadOptions)
	}
	host = name
	if port != 443 {
		host = fmt.Sprintf("%s:%d", name, port)
	}
	if header == "" {
		header = "Authorization"
	}
	for _, c := range header {
		if !(c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return store.SecretBroker{}, fmt.Errorf("%q is not a header name: use letters, digits and -, like Authorization: %w", header, ErrBadOptions)
		}
	}
	return store.SecretBroker{Host: host, Header: header}, nil
}

// brokerTarget splits a binding's host into the name and the HTTPS port
// (443 unless given; 0 for a port that is not one).
func brokerTarget(host string) (string, uint16) {
	name, p, err := net.SplitHostPort(host)
	if err != nil {
		return host, 443
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return name, 0
	}
	return name, uint16(n)
}
