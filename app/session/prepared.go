package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/prepared"
	"sandbar/app/store"
)

// A project whose trusted devcontainer.json has creation work (features,
// onCreateCommand, updateContentCommand, postCreateCommand) is set up
// once per environment key, not in every session: a machine of its own
// (preparevm.go) runs the image, the features and those commands under
// the project's network rules, powers off, and its changes become a
// read-only disk (app/env/prepared) every session of the project boots
// on under its own layer. How a session chooses its environment
// (chooseEnv):
//
//   - the key's own ready environment: the session runs only
//     postStartCommand;
//   - else a ready one of the same inputs on another commit (the same
//     base key) in the session's commit's history: it serves, the session runs updateContentCommand on its
//     warm caches, then postStartCommand, and the key's own is prepared
//     in the background for the next sessions;
//   - else, the inputs changed (a new devcontainer.json, features,
//     commands, image): the newest ready environment the project had
//     before, in the session's commit's history as above, serves while
//     the new one is prepared in the background, and the session runs
//     as that environment was made: its file, its features' environment
//     and its image (prepOrigin), never the old disk under the new file.
//     Its log says so; sessions started once the new one is ready boot
//     on it;
//   - else none ready: the session starts the preparation (or joins the
//     one running) and waits for it, its reason saying the step. The wait
//     has no deadline of its own: each step of the preparation has one
//     (setupTimeout, featureTimeout), the whole preparation is bounded by
//     prepareTimeout, and a stop ends the wait (the preparation goes on
//     for the next session);
//   - the key's preparation failed: the newest ready one of the base key
//     serves, else the previous inputs' one, with a warning in the
//     session's log saying why; with none, the session fails, saying why
//     and how to start in Sandbar's own image. A failed key is not
//     prepared again by sessions (each would wait for the same failure):
//     `sandbar env build --rebuild` does.
//
// One preparation of a project and key runs at a time: a second request
// joins the first (preparer).

// prepareTimeout bounds a whole preparation: its image, features and
// commands, the capture.
const prepareTimeout = 3 * time.Hour

// createsWork says whether cfg has anything a prepared environment keeps.
func createsWork(cfg *devcontainer.Config) bool {
	return cfg != nil && (len(cfg.Features) > 0 || !cfg.OnCreateCommand.IsZero() ||
		!cfg.UpdateContentCommand.IsZero() || !cfg.PostCreateCommand.IsZero())
}

// envKeys are a preparation's key and base key (the same inputs, no
// commit).
func envKeys(cfg *devcontainer.Config, imageID, commit string) (key, baseKey string) {
	return devcontainer.Key(cfg.KeyInput(imageID, commit)), devcontainer.Key(cfg.KeyInput(imageID, ""))
}

// envChoice is which environment a session boots on, and what else is
// done for it.
type envChoice struct {
	// Serve is the ready environment to boot on; nil when the session
	// waits for the preparation (Wait) or fails (Fail).
	Serve *prepared.Env
	// Update: Serve was prepared on another commit, so the session runs
	// updateContentCommand.
	Update bool
	// Prepare starts (or joins) the key's preparation; Wait waits for it
	// before the session boots.
	Prepare, Wait bool
	// Previous: Serve was made from other inputs (an earlier file), and
	// the session runs as it was made (prepOrigin).
	Previous bool
	// Warning is a line for the session's log: the key's preparation
	// failed and an older environment serves.
	Warning string
	// Fail is why the session cannot start: the key's preparation
	// failed and nothing serves.
	Fail string
}

// chooseEnv decides a session's environment from the project's kept
// ones (all, newest first), for key and baseKey on commit; running says
// the key is being prepared now. inHistory says whether another
// commit's environment may serve: only one prepared on a commit in the
// session's commit's history (nil: none). A preparation runs the
// repository's code at its commit (a postCreateCommand's npm install
// runs the commit's scripts, as root where sudo is on), and what it
// leaves on the disk outlives updateContentCommand: an environment
// prepared on a branch the person has not taken in (a session's merged
// branch, a contributor's) must not become the one every later session
// of the project boots on. previousOK says whether an environment of
// other inputs can serve as it was made (nil: none may).
func chooseEnv(all []prepared.Env, key, baseKey, commit string, running bool, inHistory func(envCommit string) bool, previousOK func(*prepared.Env) bool) envChoice {
	var exact, failed, other, previous *prepared.Env
	for i := range all {
		e := &all[i]
		switch {
		case e.Key == key && e.State == prepared.StateReady:
			exact = e
		case e.Key == key && e.State == prepared.StateFailed && failed == nil:
			failed = e
		case e.BaseKey == baseKey && e.State == prepared.StateReady && other == nil &&
			inHistory != nil && inHistory(e.Commit):
			other = e
		case e.BaseKey != baseKey && e.State == prepared.StateReady && previous == nil &&
			inHistory != nil && inHistory(e.Commit) && previousOK != nil && previousOK(e):
			previous = e
		}
	}
	switch {
	case exact != nil:
		return envChoice{Serve: exact}
	case running && other != nil:
		return envChoice{Serve: other, Update: true, Prepare: true}
	case running && previous != nil:
		return envChoice{Serve: previous, Previous: true, Update: true, Prepare: true}
	case running:
		return envChoice{Prepare: true, Wait: true}
	case failed != nil && other != nil:
		return envChoice{Serve: other, Update: true, Warning: fmt.Sprintf(
			"environment: WARNING: preparing the environment on %s failed (%s); this session runs on the one prepared on %s, made %s, and runs updateContentCommand. See `sandbar env logs`, fix the file, then `sandbar env build --rebuild`",
			short(commit), firstLine(failed.Error), short(other.Commit), other.Made.Local().Format("2006-01-02 15:04"))}
	case failed != nil && previous != nil:
		return envChoice{Serve: previous, Previous: true, Update: true, Warning: fmt.Sprintf(
			"environment: WARNING: preparing the environment for the changed file failed (%s); this session uses the previous one, made %s on %s, as it was made. See `sandbar env logs`, fix the file, then `sandbar env build --rebuild`",
			firstLine(failed.Error), previous.Made.Local().Format("2006-01-02 15:04"), short(previous.Commit))}
	case failed != nil:
		return envChoice{Fail: fmt.Sprintf(
			"environment: preparing it failed, and no earlier one is ready: %s\n(see `sandbar env logs`; fix the file and run `sandbar env build --rebuild`, or start in Sandbar's own image: --env default)", failed.Error)}
	case other != nil:
		return envChoice{Serve: other, Update: true, Prepare: true}
	case previous != nil:
		return envChoice{Serve: previous, Previous: true, Update: true, Prepare: true}
	}
	return envChoice{Prepare: true, Wait: true}
}

// prepJob is what one preparation needs.
type prepJob struct {
	project store.Project
	cfg     *devcontainer.Config
	// rec is the file cfg was read from, kept with the environment
	// (prepOrigin).
	rec *envRecord
	// feats is the features fetched, their install stages among them.
	feats *featureSet
	// root is the image the environment runs on (nil: Sandbar's own);
	// imageID its digest, or Sandbar's own image's id.
	root    *RootImage
	imageID string
	commit  string
	// base is the workspace's base disk at commit.
	base string
	// repoRules is the repository's trusted network file, if any.
	repoRules []byte
	// env is the environment's variables (the file's and the features'),
	// with none of Sandbar's secrets.
	env          map[string]string
	cpus, memMiB int
	key, baseKey string
}

// prepOrigin is what a prepared environment keeps of what it was made
// from (prepared.Env.Origin), so that a session can boot on it as it was
// made while the environment of a changed file is prepared: the file,
// the features' environment (not their install stages: they ran there),
// the image and the image's id in the key.
type prepOrigin struct {
	Env     *envRecord `json:"env"`
	Root    *RootImage `json:"root,omitempty"`
	ImageID string     `json:"image_id"`
}

// origin is job's prepOrigin, encoded; nil when the job has no file.
func (job prepJob) origin() json.RawMessage {
	if job.rec == nil {
		return nil
	}
	rec := *job.rec
	feats := rec.Features
	if job.feats != nil {
		feats = job.feats
	}
	if feats != nil {
		// Their install stages (the features' files) ran there.
		rec.Features = &featureSet{Env: feats.Env, Names: feats.Names}
	}
	b, err := json.Marshal(prepOrigin{Env: &rec, Root: job.root, ImageID: job.imageID})
	if err != nil {
		return nil
	}
	return b
}

// readOrigin reads e's prepOrigin, checked: its file parses, and its
// image is still on this machine (a pulled or built one kept by digest;
// Sandbar's own only while it is the guest image now, imageID).
func readOrigin(e *prepared.Env, imageID string) (*prepOrigin, *devcontainer.Config, error) {
	if len(e.Origin) == 0 {
		return nil, nil, fmt.Errorf("the environment %s keeps no record of the file it was made from (made before Sandbar kept one)", shortKey(e.Key))
	}
	var o prepOrigin
	if err := json.Unmarshal(e.Origin, &o); err != nil || o.Env == nil {
		return nil, nil, fmt.Errorf("the environment %s: its record of what it was made from does not read", shortKey(e.Key))
	}
	cfg, err := devcontainer.Parse(o.Env.File, o.Env.Data)
	if err != nil {
		return nil, nil, fmt.Errorf("the environment %s: the file it was made from: %w", shortKey(e.Key), err)
	}
	if o.Root != nil {
		if _, err := os.Stat(o.Root.Path); err != nil {
			return nil, nil, fmt.Errorf("the environment %s: its image %s is no longer on this machine", shortKey(e.Key), o.Root.Name)
		}
	} else if o.ImageID != imageID {
		return nil, nil, fmt.Errorf("the environment %s was made on an earlier Sandbar image", shortKey(e.Key))
	}
	return &o, cfg, nil
}

// preparation is one preparation running in this process.
type preparation struct {
	project      int64
	key, baseKey string
	commit       string
	started      time.Time
	done         chan struct{}
	// env and err are its outcome, once done is closed.
	env prepared.Env
	err error

	mu      sync.Mutex
	step    string
	changed chan struct{} // closed and replaced at each step
	log     string
}

// progress is the step running and a channel closed at the next one.
func (p *preparation) progress() (string, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.step, p.changed
}

func (p *preparation) setStep(step string) {
	p.mu.Lock()
	p.step = step
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// preparer holds the preparations running in this process, one per
// project and key.
type preparer struct {
	mu      sync.Mutex
	running map[string]*preparation
	// run makes one environment; nil is Manager.runPreparation (a unit
	// test's stand-in takes its place: the real one needs a VM).
	run func(ctx context.Context, job prepJob, p *preparation) (prepared.Env, error)
}

func prepKey(project int64, key string) string { return envName(project) + "/" + key }

// find is the preparation of project and key running now, if any.
func (m *Manager) findPreparation(project int64, key string) *preparation {
	m.prep.mu.Lock()
	defer m.prep.mu.Unlock()
	return m.prep.running[prepKey(project, key)]
}

// prepare starts the preparation of job, or joins the one of its
// project and key running already. It runs in the background, owned by
// the Manager, until done or the Manager closes.
func (m *Manager) prepare(job prepJob) *preparation {
	m.prep.mu.Lock()
	defer m.prep.mu.Unlock()
	if m.prep.running == nil {
		m.prep.running = map[string]*preparation{}
	}
	k := prepKey(job.project.ID, job.key)
	if p := m.prep.running[k]; p != nil {
		return p
	}
	p := &preparation{project: job.project.ID, key: job.key, baseKey: job.baseKey, commit: job.commit,
		started: time.Now(), done: make(chan struct{}), changed: make(chan struct{}), step: "starting"}
	m.prep.running[k] = p
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			m.prep.mu.Lock()
			delete(m.prep.running, k)
			m.prep.mu.Unlock()
			close(p.done)
		}()
		ctx, cancel := context.WithTimeout(m.life, prepareTimeout)
		defer cancel()
		run := m.prep.run
		if run == nil {
			run = m.runPreparation
		}
		p.env, p.err = run(ctx, job, p)
		if p.err != nil {
			m.log.Warn("preparing a project's environment failed", "project", job.project.Name, "key", shortKey(job.key), "err", p.err)
		} else {
			m.log.Info("prepared a project's environment", "project", job.project.Name, "key", shortKey(job.key), "took", p.env.Took)
		}
	}()
	return p
}

// Preparing is how many environments this process prepares now: an
// engine with one is not idle.
func (m *Manager) Preparing() int {
	m.prep.mu.Lock()
	defer m.prep.mu.Unlock()
	return len(m.prep.running)
}

// preparedRecord is what a session records of the prepared environment
// it boots on (config.SessionDir.PreparedEnv): a restart boots on the
// same disk.
type preparedRecord struct {
	Path   string    `json:"path"`
	Key    string    `json:"key"`
	Commit string    `json:"commit"`
	Made   time.Time `json:"made"`
}

func readPreparedRecord(path string) (*preparedRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec preparedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("the session's record of its prepared environment: %w", err)
	}
	return &rec, nil
}

// preparedInUse is the prepared disks the sessions on this machine
// (those in the trash included: they may come back) boot on.
func (m *Manager) preparedInUse() map[string]bool {
	used := map[string]bool{}
	name := filepath.Base(m.cfg.Paths.SessionDir("x").PreparedEnv())
	for _, dir := range []string{m.cfg.Paths.Sessions(), m.cfg.Paths.Trash()} {
		files, _ := filepath.Glob(filepath.Join(dir, "*", name))
		for _, f := range files {
			if rec, err := readPreparedRecord(f); err == nil && rec != nil {
				used[rec.Path] = true
			}
		}
	}
	return used
}

// preparedKeep is how long a prepared environment no session boots on
// is kept after its last use, unless it is its base key's newest.
const preparedKeep = 14 * 24 * time.Hour

// prunePrepared removes the prepared environments nothing needs (see
// prepared.Store.Prune).
func (m *Manager) prunePrepared(ctx context.Context, now time.Time) {
	used := m.preparedInUse()
	removed, err := m.preparedStore().Prune(ctx, now, preparedKeep, func(p string) bool { return used[p] })
	if err != nil {
		m.log.Warn("prune prepared environments", "err", err)
	}
	for _, e := range removed {
		m.log.Info("removed a prepared environment no session used", "project", e.Project, "key", shortKey(e.Key), "size", e.Size)
	}
}

// writeJSONFile writes v to path as JSON, private to the person.
func writeJSONFile(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
