package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sandbar/app/env/ociimage"
	"sandbar/app/env/prepared"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// PrepareEnvironment makes the project's prepared environment now, for
// the commit its repository has checked out (`sandbar env build`, a
// window's Rebuild): it pulls the image, fetches the features and the
// commit, then starts the preparation in the background (or joins the
// one running) and returns its state at once; PreparedView.Log grows
// as it goes and Environment says when it is done. A key already ready
// is left as it is unless rebuild; a failed one is prepared again.
// A project whose environment has nothing to prepare is refused with
// ErrBadOptions, saying why.
func (m *Manager) PrepareEnvironment(ctx context.Context, projectRef string, rebuild bool) (PreparedView, error) {
	proj, err := m.findProject(ctx, projectRef)
	if err != nil {
		return PreparedView{}, err
	}
	job, err := m.jobFor(ctx, proj)
	if err != nil {
		return PreparedView{}, err
	}
	all, err := m.preparedStore().List(envName(proj.ID))
	if err != nil {
		return PreparedView{}, err
	}
	if !rebuild && m.findPreparation(proj.ID, job.key) == nil {
		if c := chooseEnv(all, job.key, job.baseKey, job.commit, false, nil, nil); c.Serve != nil && c.Serve.Key == job.key {
			return m.preparedView(proj)
		}
	}
	p := m.prepare(job)
	v, err := m.preparedView(proj)
	if err != nil {
		return v, err
	}
	// The view from the disk may not show the build yet: say it here.
	step, _ := p.progress()
	p.mu.Lock()
	log := p.log
	p.mu.Unlock()
	v.State, v.Step, v.Started, v.Key, v.KeyShort, v.Commit, v.Error, v.Made = PrepPreparing, step, p.started, p.key, shortKey(p.key), p.commit, "", time.Time{}
	v.Log = log // "" until its folder is made: Environment says it then
	return v, nil
}

// jobFor gathers what preparing project's environment needs, as a new
// session of it would: its trusted devcontainer.json, its features, its
// image (pulled), and the workspace at the checked-out commit.
func (m *Manager) jobFor(ctx context.Context, proj store.Project) (prepJob, error) {
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return prepJob{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	review, err := m.repoReview(ctx, proj, repo.Root)
	if err != nil {
		return prepJob{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	rec, cfg, err := repoEnvironment(review)
	switch {
	case err != nil:
		return prepJob{}, fmt.Errorf("project %s: %w: %w", proj.Name, err, ErrBadOptions)
	case cfg == nil:
		return prepJob{}, fmt.Errorf("project %s has no trusted devcontainer.json: its sessions run in Sandbar's own image, with nothing to prepare (sandbar env says why): %w", proj.Name, ErrBadOptions)
	case !createsWork(cfg):
		return prepJob{}, fmt.Errorf("%s names no features and no onCreateCommand, updateContentCommand or postCreateCommand: there is nothing to prepare: %w", cfg.File, ErrBadOptions)
	}
	if cfg.Build != nil && cfg.Image == "" {
		// Its environment is prepared on the image its Dockerfile makes,
		// which a session builds in a VM as it starts (buildImage):
		// preparing it here on Sandbar's own image would make one no
		// session of the project boots on.
		return prepJob{}, fmt.Errorf("%s builds its image from %s, which is built (in a VM) when a session starts: start a session of the project to build it and prepare its environment: %w", cfg.File, cfg.Build.Dockerfile, ErrBadOptions)
	}
	fetched, err := fetchFeatures(ctx, review, cfg, m.cfg.Proxy.HTTPProxy)
	if err != nil {
		return prepJob{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	feats, err := newFeatureSet(fetched)
	if err != nil {
		return prepJob{}, err
	}
	job := prepJob{project: proj, cfg: cfg, rec: rec, feats: feats, repoRules: review.NetworkRules()}
	if cfg.Image != "" {
		img, err := (&ociimage.Store{Dir: m.cfg.Paths.EnvImages()}).Pull(ctx, cfg.Image, ociimage.PullOptions{Proxy: m.cfg.Proxy.HTTPProxy})
		if errors.Is(err, ociimage.ErrUnreachable) {
			if stored, ok := m.storedImage(cfg.Image); ok {
				img, err = stored, nil
			}
		}
		if err != nil {
			return prepJob{}, fmt.Errorf("environment: the image %s that %s asks for: %w", cfg.Image, cfg.File, err)
		}
		job.root = &RootImage{Path: img.Path, Name: cfg.Image, Digest: img.Digest, User: cfg.RemoteUser,
			Env: img.Config.Env, WorkingDir: img.Config.WorkingDir}
		if job.root.User == "" {
			job.root.User = cfg.ContainerUser
		}
		if job.root.User == "" {
			job.root.User = img.Config.User
		}
		if err := job.root.check(); err != nil {
			return prepJob{}, fmt.Errorf("environment: the image %s: %w", cfg.Image, err)
		}
	}
	if job.imageID, err = m.imageID(ctx, job.root); err != nil {
		return prepJob{}, err
	}
	mr, unlock, err := m.mirror(ctx, proj.ID)
	if err != nil {
		return prepJob{}, err
	}
	defer unlock()
	if job.commit, err = mr.Fetch(ctx, repo, "", nil); err != nil {
		return prepJob{}, err
	}
	info, err := mr.BuildBase(ctx, workspace.BaseOptions{Source: repo, Commit: job.commit, Dir: m.cfg.Paths.ProjectBases(proj.ID), IncludeLists: review.IncludeLists()})
	if err != nil {
		return prepJob{}, err
	}
	job.base = info.Path
	o := Options{}
	if hr := cfg.HostRequirements; hr.CPUs > 0 {
		o.CPUs = min(hr.CPUs, m.cfg.HostCPUs)
	}
	if hr := cfg.HostRequirements; hr.MemoryBytes > 0 {
		o.MemoryMiB = int((hr.MemoryBytes + 1<<20 - 1) >> 20)
	}
	m.limits(ctx, &o, m.cfg.HostCPUs)
	job.cpus, job.memMiB = o.CPUs, o.MemoryMiB
	var imageEnv []string
	if job.root != nil {
		imageEnv = job.root.Env
	}
	job.env = environmentEnv(cfg, feats.Env, imageEnv)
	job.key, job.baseKey = envKeys(cfg, job.imageID, job.commit)
	return job, nil
}

// imageID names the image an environment starts from in its key: the
// pulled image's digest, or Sandbar's own image's manifest hash (its
// folder's name), so that a rebuilt guest image makes new environments.
func (m *Manager) imageID(ctx context.Context, root *RootImage) (string, error) {
	if root != nil {
		return root.Digest, nil
	}
	img, err := m.cfg.Image(ctx)
	if err != nil {
		return "", fmt.Errorf("guest image: %w", err)
	}
	return "sandbar-image:" + filepath.Base(img.Dir), nil
}

// usePrepared chooses a new session's environment (chooseEnv) once its
// image is pulled and its workspace made: it boots on a prepared one,
// waiting for its preparation when none is ready, and runs only what a
// session on it runs. A project with nothing to prepare is left as it
// was (the session runs the file's commands itself).
func (r *run) usePrepared(ctx context.Context) error {
	cfg := r.envCfg
	if !createsWork(cfg) {
		return nil
	}
	proj, err := r.m.Project(ctx, r.s.ProjectID)
	if err != nil {
		return err
	}
	root, err := readRootImage(r.dir.RootImage())
	if err != nil {
		return err
	}
	commit, err := readSmallFile(r.dir.BaseCommit())
	if err != nil {
		return fmt.Errorf("the session's base commit: %w", err)
	}
	base, err := r.baseDisk()
	if err != nil {
		return err
	}
	imageID, err := r.m.imageID(ctx, root)
	if err != nil {
		return err
	}
	repoRules, _ := os.ReadFile(r.dir.NetworkRepo())
	rec, err := readEnvRecord(r.dir.Environment())
	if err != nil {
		return err
	}
	job := prepJob{project: proj, cfg: cfg, rec: rec, feats: r.envFeatSet, root: root, imageID: imageID, commit: commit, base: base,
		repoRules: repoRules, env: r.stepEnv, cpus: r.s.Limits.CPUs, memMiB: r.s.Limits.MemoryMiB}
	job.key, job.baseKey = envKeys(cfg, imageID, commit)
	st := r.m.preparedStore()
	all, err := st.List(envName(proj.ID))
	if err != nil {
		return err
	}
	mr, unlock, err := r.m.mirror(ctx, proj.ID)
	if err != nil {
		return err
	}
	inHistory := func(envCommit string) bool {
		ok, err := mr.IsAncestor(ctx, envCommit, commit)
		return err == nil && ok
	}
	ownImage, err := r.m.imageID(ctx, nil)
	if err != nil {
		return err
	}
	previousOK := func(e *prepared.Env) bool {
		_, _, err := readOrigin(e, ownImage)
		if err != nil {
			r.log.Info("a previous prepared environment cannot serve", "key", shortKey(e.Key), "err", err)
		}
		return err == nil
	}
	c := chooseEnv(all, job.key, job.baseKey, commit, r.m.findPreparation(proj.ID, job.key) != nil, inHistory, previousOK)
	unlock()
	if c.Fail != "" {
		return errors.New(c.Fail)
	}
	if c.Warning != "" {
		r.systemLine(c.Warning)
	}
	var p *preparation
	if c.Prepare {
		p = r.m.prepare(job)
		if !c.Wait {
			r.systemLine(fmt.Sprintf("environment: preparing it on %s in the background (key %s) for the next sessions; this one runs on the one of %s", short(commit), shortKey(job.key), short(c.Serve.Commit)))
		}
	}
	serve := c.Serve
	if c.Wait {
		e, err := r.waitPrepared(ctx, p)
		if err != nil {
			return err
		}
		serve = &e
	}
	if serve == nil { // stopped while waiting
		return nil
	}
	if c.Previous {
		changed := cfg.File
		if err := r.usePrevious(serve, ownImage); err != nil {
			return err
		}
		cfg = r.envCfg
		why := "is being rebuilt"
		if c.Warning != "" {
			why = "could not be rebuilt (see the warning above)"
		}
		r.systemLine(fmt.Sprintf("environment: the environment %s for the change in %s; this session uses the previous one from %s (made on %s from the file as it was then)",
			why, changed, serve.Made.Local().Format("2006-01-02 15:04"), short(serve.Commit)))
	}
	update := c.Update && serve.Commit != commit
	r.setupSteps = sessionOnPrepared(cfg, r.stepEnv, update)
	pr := preparedRecord{Path: serve.Path, Key: serve.Key, Commit: serve.Commit, Made: serve.Made}
	if err := writeJSONFile(r.dir.PreparedEnv(), pr); err != nil {
		return err
	}
	_ = st.Touch(serve.Project, serve.Key)
	ran := "postStartCommand only"
	if update {
		ran = "updateContentCommand (it was prepared on another commit), then postStartCommand"
	}
	if cfg.PostStartCommand.IsZero() {
		ran = strings.TrimSuffix(strings.TrimSuffix(ran, ", then postStartCommand"), "postStartCommand only")
		if ran == "" {
			ran = "nothing of the file's"
		}
	}
	r.systemLine(fmt.Sprintf("environment: prepared environment %s, made %s on %s (features and creation commands ran there); this session runs %s",
		shortKey(serve.Key), serve.Made.Local().Format("2006-01-02 15:04"), short(serve.Commit), ran))
	return nil
}

// usePrevious makes the run boot on e, an environment made from other
// inputs, as it was made (prepOrigin): its file's agent environment,
// users and commands, its features' environment and its image; and
// keeps them in the session's folder, so a restart is the same machine.
func (r *run) usePrevious(e *prepared.Env, ownImage string) error {
	o, cfg, err := readOrigin(e, ownImage)
	if err != nil {
		return err
	}
	if o.Root != nil {
		if err := writeRootImage(r.dir.RootImage(), o.Root); err != nil {
			return err
		}
	} else if err := os.Remove(r.dir.RootImage()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := keepEnvironment(r.dir.Environment(), o.Env); err != nil {
		return err
	}
	// useEnvironment keeps r.env as Sandbar's own variables: give it
	// those, not the ones the changed file added to them.
	r.env = maps.Clone(r.sandbarEnv)
	r.useEnvironment(cfg, o.Env.Features)
	return nil
}

// waitPrepared waits for p, the session's reason saying its step; a
// stop ends the wait (nil env, no error) while the preparation goes on.
func (r *run) waitPrepared(ctx context.Context, p *preparation) (prepared.Env, error) {
	r.systemLine(fmt.Sprintf("environment: preparing it (key %s): features and creation commands run once, for every session of the project; `sandbar env logs -f` follows it", shortKey(p.key)))
	for {
		step, changed := p.progress()
		r.m.setState(ctx, r.id, StateProvisioning, "", "preparing the environment: "+step+"…", nil)
		select {
		case <-p.done:
			if p.err != nil {
				return prepared.Env{}, fmt.Errorf("environment: preparing it failed: %w\n(see `sandbar env logs`; fix the file and run `sandbar env build --rebuild`, or start in Sandbar's own image: --env default)", p.err)
			}
			r.systemLine(fmt.Sprintf("environment: prepared in %s", p.env.Took.Round(1e9)))
			return p.env, nil
		case <-changed:
		case <-r.stopReq:
			return prepared.Env{}, nil
		case <-ctx.Done():
			return prepared.Env{}, ctx.Err()
		}
	}
}

// preparedDisk is the prepared environment a session boots on, as
// usePrepared recorded it ("" when none).
func (r *run) preparedDisk() (string, error) {
	rec, err := readPreparedRecord(r.dir.PreparedEnv())
	if err != nil || rec == nil {
		return "", err
	}
	if _, err := os.Stat(rec.Path); err != nil {
		return "", fmt.Errorf("the prepared environment %s this session boots on is gone: start a new session", shortKey(rec.Key))
	}
	return rec.Path, nil
}
