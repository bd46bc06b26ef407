package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"sandbar/app/env/devcontainer"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// Start validates opts, records a new session and starts it in the
// background: clone, boot, agent. It returns once the session is recorded;
// its progress arrives as events. Errors of the options (no such project,
// impossible limits, not enough memory, no credentials) are returned here
// and nothing is created.
func (m *Manager) Start(ctx context.Context, o Options) (_ store.Session, err error) {
	var proj store.Project
	switch {
	case o.Repo != "":
		proj, err = m.projectForRepo(ctx, o.Repo)
	case o.Project != "":
		proj, err = m.findProject(ctx, o.Project)
	default:
		err = fmt.Errorf("no project: give a project or a repository path: %w", ErrBadOptions)
	}
	if err != nil {
		return store.Session{}, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return store.Session{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	// The repository's settings files are used only as far as the
	// person trusted them; the session's log says what was left out.
	review, err := m.repoReview(ctx, proj, repo.Root)
	if err != nil {
		return store.Session{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	var envRec *envRecord
	var envCfg *devcontainer.Config
	switch o.Env {
	case "", EnvProject:
		if envRec, envCfg, err = repoEnvironment(review); err != nil {
			return store.Session{}, fmt.Errorf("project %s: %w: %w", proj.Name, err, ErrBadOptions)
		}
	case EnvDefault:
	default:
		return store.Session{}, fmt.Errorf("environment %q: give %q (the project's) or %q (Sandbar's own): %w", o.Env, EnvProject, EnvDefault, ErrBadOptions)
	}
	// Features are fetched before anything is made for the session: one
	// that cannot be fetched fails the start, naming it and what to do.
	var feats *featureSet
	if fetched, err := fetchFeatures(ctx, review, envCfg, m.cfg.Proxy.HTTPProxy); err != nil {
		return store.Session{}, fmt.Errorf("project %s: %w", proj.Name, err)
	} else if feats, err = newFeatureSet(fetched); err != nil {
		return store.Session{}, err
	} else if envRec != nil && len(fetched) > 0 {
		envRec.Features = feats
	}
	// Where it runs comes first: its limits are checked against that
	// machine's (a remote host's own, as it reports them now). --on auto
	// picks once the limits are known; their defaults are this machine's.
	at := place{CPUs: m.cfg.HostCPUs, Memory: m.cfg.HostMemory}
	if o.On != "" && o.On != OnAuto {
		if at, err = m.placeOf(ctx, o.On); err != nil {
			return store.Session{}, err
		}
	}
	if envCfg != nil {
		// The file's hostRequirements are the session's default limits.
		if hr := envCfg.HostRequirements; o.CPUs == 0 && hr.CPUs > 0 {
			o.CPUs = min(hr.CPUs, at.CPUs)
		}
		if hr := envCfg.HostRequirements; o.MemoryMiB == 0 && hr.MemoryBytes > 0 {
			o.MemoryMiB = int((hr.MemoryBytes + 1<<20 - 1) >> 20)
		}
	}
	m.limits(ctx, &o, at.CPUs)
	var placed string
	if o.On == OnAuto {
		if at, placed, err = m.pickPlace(ctx, o.MemoryMiB, o.CPUs); err != nil {
			return store.Session{}, err
		}
		o.On = at.On
	}
	if err := m.validate(o, at); err != nil {
		return store.Session{}, err
	}
	repoRules := review.NetworkRules()
	title, err := CleanTitle(o.Title)
	if err != nil {
		return store.Session{}, err
	}
	id, err := newID()
	if err != nil {
		return store.Session{}, err
	}
	if title == "" {
		title = TitleFor(o.Prompt, o.Agent.stored(), id)
	}
	now := time.Now()
	s := store.Session{
		ID: id, ProjectID: proj.ID, Title: title, Branch: "sandbar/" + id, Base: o.Base, Prompt: o.Prompt,
		Agent: o.Agent.stored(),
		Limits: store.Limits{CPUs: o.CPUs, MemoryMiB: o.MemoryMiB, DiskGiB: o.DiskGiB, Network: !o.NoNetwork && o.Network != NetworkOff,
			NetMode: netMode(o), Timeout: o.Timeout, IdleTimeout: o.IdleTimeout},
		State: StateProvisioning, Reason: "preparing a clone of " + repo.Root, Owner: m.owner,
		Timings: map[string]time.Duration{}, Created: now, Updated: now, Started: now,
	}

	// What a start takes before the session is recorded is given back if
	// it goes no further.
	var undo cleanups
	defer func() {
		if err != nil {
			if cerr := undo.run(); cerr != nil {
				m.log.Warn("undo a start that failed", "session", id, "err", cerr)
			}
		}
	}()
	// Until it is recorded, its folder is no lost session's for the
	// engine's healing (heal.go) to adopt.
	release, err := m.reserveStart(id)
	if err != nil {
		return store.Session{}, err
	}
	defer release()
	dir := m.cfg.Paths.SessionDir(id)
	if err := os.MkdirAll(dir.Path(), 0o700); err != nil {
		return store.Session{}, fmt.Errorf("create the session directory: %w", err)
	}
	undo.add(func() error { return os.RemoveAll(dir.Path()) })
	if err := writeMeta(dir, s, proj.Path); err != nil {
		return store.Session{}, err
	}
	if o.Root != nil {
		if err := writeRootImage(dir.RootImage(), o.Root); err != nil {
			return store.Session{}, err
		}
	}
	if len(repoRules) > 0 {
		if err := os.WriteFile(dir.NetworkRepo(), repoRules, 0o600); err != nil {
			return store.Session{}, fmt.Errorf("keep the session's copy of %s: %w", workspace.NetworkFile, err)
		}
	}
	if envRec != nil {
		if err := keepEnvironment(dir.Environment(), envRec); err != nil {
			return store.Session{}, err
		}
	}
	setup, err := m.admit(ctx, s, at, o.Agent, false)
	if err != nil {
		return store.Session{}, err
	}
	if err := m.cfg.Store.CreateSession(ctx, s); err != nil {
		return store.Session{}, err
	}
	if o.On != "" {
		if err := m.cfg.Store.SetSessionHost(ctx, s.ID, o.On); err != nil {
			m.cfg.Store.DeleteSession(ctx, s.ID)
			return store.Session{}, err
		}
	}
	undo.keep()
	m.cfg.Store.TouchProject(ctx, proj.ID, now)
	m.watchSource(proj)
	m.publishState(s)
	r := m.newRun(s, repo, setup, o.IdleStop)
	if placed != "" {
		m.log.Info(placed, "session", s.ID)
		r.systemLine(placed)
	}
	r.includeLists, r.trustNotes = review.IncludeLists(), review.Notes()
	r.useEnvironment(envCfg, feats)
	m.launch(r, func(ctx context.Context) error { return r.provisionAndRun(ctx) })
	return s, nil
}

func newID() (string, error) {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
