package session

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"sandbar/app/net/broker"
	"sandbar/app/net/netstack"
	"sandbar/app/store"
)

// The model API's credentials: always brokered, never in the VM.
var modelCredentials = map[string]string{
	"ANTHROPIC_API_KEY":       "x-api-key",
	"CLAUDE_CODE_OAUTH_TOKEN": "Authorization",
}

// brokerPort is the gateway's port the model-API broker serves.
const brokerPort = 80

// BrokerURL is ANTHROPIC_BASE_URL inside a session.
var BrokerURL = "http://" + netstack.GatewayIP.String()

// netCredentials are the secrets of a session's environment the broker
// keeps on the host: the model API's, and every secret bound to a host.
// The environment gets a sentinel for each instead of its value.
type netCredentials struct {
	api       []broker.Credential // bound to the model API
	intercept []broker.Credential // bound to another host (HTTPS interception)
	ports     []uint16            // the HTTPS port of each of intercept's hosts
}

// brokered splits env: brokered secrets leave it (their sentinel takes
// their place) and come back as credentials.
func (m *Manager) brokered(ctx context.Context, env map[string]string, upstream *url.URL) (netCredentials, error) {
	var c netCredentials
	bindings, err := m.cfg.Store.SecretBrokers(ctx)
	if err != nil {
		return c, err
	}
	for name, value := range env {
		header, api := modelCredentials[name]
		b, bound := bindings[name]
		if !api && !bound {
			continue
		}
		sentinel, err := broker.NewSentinel(name)
		if err != nil {
			return c, err
		}
		env[name] = sentinel
		if api {
			c.api = append(c.api, broker.Credential{Name: name, Sentinel: sentinel, Value: value, Host: upstream.Hostname(), Header: header})
			continue
		}
		host, port := brokerTarget(b.Host)
		c.intercept = append(c.intercept, broker.Credential{Name: name, Sentinel: sentinel, Value: value, Host: host, Header: b.Header})
		c.ports = append(c.ports, port)
	}
	if len(c.api) > 0 {
		env["ANTHROPIC_BASE_URL"] = BrokerURL
	}
	return c, nil
}

// anthropicUpstream is where the broker sends model-API requests.
func (m *Manager) anthropicUpstream(ctx context.Context) (*url.URL, error) {
	raw := DefaultAnthropicUpstream
	if v, ok, _ := m.cfg.Store.Setting(ctx, store.SettingAnthropicUpstream); ok && strings.TrimSpace(v) != "" {
		raw = strings.TrimSpace(v)
	}
	if v := m.cfg.AnthropicUpstream; v != "" {
		raw = v
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the model API's address %q is not an http(s) URL: fix the %s setting", raw, store.SettingAnthropicUpstream)
	}
	return u, nil
}

// serveBroker serves the model-API broker on the gateway.
func (sn *sessionNet) serveBroker() error {
	r := sn.r
	h, err := broker.NewAPI(broker.APIConfig{
		Upstream:    r.setup.upstream,
		Credentials: r.setup.creds.api,
		OnRequest:   sn.brokerRequest,
		Proxy:       r.m.cfg.Proxy.HTTPProxy,
		RootCAs:     r.m.cfg.UpstreamRoots,
		Logger:      sn.log,
	})
	if err != nil {
		return err
	}
	ln, err := sn.n.Listen(brokerPort)
	if err != nil {
		return err
	}
	sn.api = broker.NewServer(sn.gateModelAPI(h), sn.log)
	sn.done.Go(func() { sn.api.Serve(ln) })
	return nil
}

func (sn *sessionNet) brokerRequest(ri broker.RequestInfo) {
	if ri.Status >= 200 && ri.Status < 400 {
		return
	}
	sn.r.systemLine(fmt.Sprintf("model API: %s %s answered %d after %s", ri.Method, logPath(ri.Path), ri.Status, ri.Duration.Round(time.Millisecond)))
}

// logPath writes a request's path for a line of Sandbar's own log. The
// guest chooses it, decoded (%0A is a line break): anything but printable
// ASCII gets it quoted, so it cannot start a line that reads as Sandbar's.
func logPath(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] < 0x21 || p[i] > 0x7e {
			return strconv.QuoteToASCII(p)
		}
	}
	return p
}
