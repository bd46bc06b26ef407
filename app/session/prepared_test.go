package session

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sandbar/app/env/prepared"
	"sandbar/app/store"
)

// TestChooseEnv: which environment serves a session, and what else is
// done for it, from the project's kept environments.
func TestChooseEnv(t *testing.T) {
	made := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ready := func(key, base, commit string) prepared.Env {
		return prepared.Env{Key: key, BaseKey: base, Commit: commit, State: prepared.StateReady, Made: made, Path: "/envs/" + key}
	}
	failed := func(key, base, commit string) prepared.Env {
		return prepared.Env{Key: key, BaseKey: base, Commit: commit, State: prepared.StateFailed, Made: made,
			Error: "the environment's setup failed: postCreateCommand exited 3 after 1s; its output ended with: boom"}
	}
	for _, tc := range []struct {
		name    string
		all     []prepared.Env // newest first
		running bool
		serve   string // the key served, "" none
		update, prepare, wait,
		warn, fail bool
	}{
		{name: "nothing yet: prepare and wait", prepare: true, wait: true},
		{name: "nothing yet, being prepared: join and wait", running: true, prepare: true, wait: true},
		{name: "the key's own", all: []prepared.Env{ready("k1", "b", "c1"), ready("k0", "b", "c0")}, serve: "k1"},
		{name: "another commit's: it serves with updateContentCommand, the key's own is made for the next",
			all: []prepared.Env{ready("k0", "b", "c0")}, serve: "k0", update: true, prepare: true},
		{name: "another commit's while the key's is being made: it serves, no wait",
			all: []prepared.Env{ready("k0", "b", "c0")}, running: true, serve: "k0", update: true, prepare: true},
		{name: "another file's (another base key) never serves",
			all: []prepared.Env{ready("x0", "other", "c1")}, prepare: true, wait: true},
		{name: "the key failed, an older one serves with a warning",
			all: []prepared.Env{failed("k1", "b", "c1"), ready("k0", "b", "c0")}, serve: "k0", update: true, warn: true},
		{name: "the key failed, nothing serves: the session fails",
			all: []prepared.Env{failed("k1", "b", "c1")}, fail: true},
		{name: "the key failed beside its ready one (a failed remake): the ready one serves",
			all: []prepared.Env{failed("k1", "b", "c1"), ready("k1", "b", "c1")}, serve: "k1"},
		{name: "a failed key is made again once asked (running)",
			all: []prepared.Env{failed("k1", "b", "c1")}, running: true, prepare: true, wait: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chooseEnv(tc.all, "k1", "b", "c1", tc.running)
			serve := ""
			if c.Serve != nil {
				serve = c.Serve.Key
			}
			if serve != tc.serve || c.Update != tc.update || c.Prepare != tc.prepare || c.Wait != tc.wait ||
				(c.Warning != "") != tc.warn || (c.Fail != "") != tc.fail {
				t.Errorf("chooseEnv = serve %q update %v prepare %v wait %v warning %q fail %q", serve, c.Update, c.Prepare, c.Wait, c.Warning, c.Fail)
			}
			if c.Fail != "" && (!strings.Contains(c.Fail, "exited 3") || !strings.Contains(c.Fail, "--env default")) {
				t.Errorf("a failure says neither why nor what to do: %q", c.Fail)
			}
			if c.Warning != "" && (!strings.Contains(c.Warning, "WARNING") || !strings.Contains(c.Warning, "exited 3")) {
				t.Errorf("the warning: %q", c.Warning)
			}
		})
	}
}

// TestPreparationsJoin: a second request for a project and key while
// its preparation runs joins it (one run), another key runs beside it,
// and every waiter gets the outcome.
func TestPreparationsJoin(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	release := make(chan struct{})
	f.m.prep.run = func(ctx context.Context, job prepJob, p *preparation) (prepared.Env, error) {
		runs.Add(1)
		p.setStep("running postCreateCommand")
		select {
		case <-release:
		case <-ctx.Done():
			return prepared.Env{}, ctx.Err()
		}
		if job.key == "bad" {
			return prepared.Env{}, errors.New("postCreateCommand exited 1")
		}
		return prepared.Env{Key: job.key, State: prepared.StateReady}, nil
	}
	proj := store.Project{ID: 7, Name: "p"}
	a := f.m.prepare(prepJob{project: proj, key: "k1", baseKey: "b"})
	step, changed := a.progress()
	if step == "starting" {
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("the preparation said no step")
		}
	}
	b := f.m.prepare(prepJob{project: proj, key: "k1", baseKey: "b"})
	other := f.m.prepare(prepJob{project: proj, key: "bad", baseKey: "b"})
	if a != b {
		t.Error("a second request for the same key did not join the first")
	}
	if a == other {
		t.Error("another key joined the first")
	}
	if f.m.findPreparation(7, "k1") != a || f.m.findPreparation(8, "k1") != nil {
		t.Error("findPreparation does not find the running one by project and key")
	}
	if n := f.m.Preparing(); n != 2 {
		t.Errorf("Preparing = %d, want 2", n)
	}
	if s, _ := a.progress(); s != "running postCreateCommand" {
		t.Errorf("the step: %q", s)
	}
	close(release)
	for _, p := range []*preparation{a, other} {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a preparation did not end")
		}
	}
	if a.err != nil || a.env.Key != "k1" || other.err == nil {
		t.Errorf("outcomes: %+v %v; %v", a.env, a.err, other.err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("%d runs, want 2 (one per key)", n)
	}
	if n := f.m.Preparing(); n != 0 {
		t.Errorf("Preparing = %d after they ended", n)
	}
	if c := f.m.prepare(prepJob{project: proj, key: "k1"}); c == a {
		t.Error("a request after the end joined the ended preparation")
	}
}

// TestPrepareStages: the preparing machine runs Sandbar's preparing
// steps, the features, onCreate, updateContent and postCreate, never
// postStart; a session on the prepared environment runs the preparing
// steps, updateContent only on another commit, and postStart.
func TestPrepareStages(t *testing.T) {
	cfg := parseDC(t, `{
		"mounts": [{"type": "tmpfs", "target": "/scratch"}],
		"onCreateCommand": "make deps",
		"updateContentCommand": ["npm", "ci"],
		"postCreateCommand": "echo made",
		"postStartCommand": "npm start &",
	}`)
	feats := &featureSet{Stages: [][]SetupStep{{{Name: "feature go (1)", User: "root"}}}}
	names := func(stages [][]SetupStep) (out []string) {
		for _, st := range stages {
			for _, s := range st {
				out = append(out, s.Name)
			}
		}
		return out
	}
	env := map[string]string{}
	if got, want := names(prepareStages(cfg, env, feats)), []string{"mounts (tmpfs)", "feature go (1)", "onCreateCommand", "updateContentCommand", "postCreateCommand"}; !reflect.DeepEqual(got, want) {
		t.Errorf("preparing runs %q, want %q", got, want)
	}
	if got, want := names(sessionOnPrepared(cfg, env, false)), []string{"mounts (tmpfs)", "postStartCommand"}; !reflect.DeepEqual(got, want) {
		t.Errorf("a session on its own commit runs %q, want %q", got, want)
	}
	if got, want := names(sessionOnPrepared(cfg, env, true)), []string{"mounts (tmpfs)", "updateContentCommand", "postStartCommand"}; !reflect.DeepEqual(got, want) {
		t.Errorf("a session on another commit runs %q, want %q", got, want)
	}
	if createsWork(parseDC(t, `{"postStartCommand": "x", "image": "a"}`)) || !createsWork(cfg) {
		t.Error("createsWork")
	}
	k1, b1 := envKeys(cfg, "sha256:a", "c1")
	k2, b2 := envKeys(cfg, "sha256:a", "c2")
	if k1 == k2 || b1 != b2 || k1 == b1 {
		t.Error("keys: another commit must change the key and keep the base key")
	}
}

// TestPreparedView: what `sandbar env` and a window read of a project's
// prepared environments from the disk: the newest preparation's state
// (a failure, or one running with its step), and the ready one that
// serves meanwhile.
func TestPreparedView(t *testing.T) {
	f := newFixture(t)
	st := f.m.preparedStore()
	proj := store.Project{ID: 3, Name: "p"}
	v, err := f.m.preparedView(proj)
	if err != nil || v.State != PrepNone || v.Serving != nil {
		t.Fatalf("nothing prepared: %+v %v", v, err)
	}
	keep := func(key string, fail bool) {
		b, err := st.Begin("3", key)
		if err != nil {
			t.Fatal(err)
		}
		if fail {
			_, err = b.Fail(prepared.Env{BaseKey: "b", Commit: "c2"}, errors.New("postCreateCommand exited 7"))
		} else {
			if err := writeJSONFile(b.Disk(), "disk"); err != nil {
				t.Fatal(err)
			}
			_, err = b.Finish(prepared.Env{BaseKey: "b", Commit: "c1", Took: 30 * time.Second, SetupTook: 20 * time.Second})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	keep("k1", false)
	time.Sleep(10 * time.Millisecond)
	keep("k2", true)
	v, _ = f.m.preparedView(proj)
	if v.State != PrepFailed || v.Key != "k2" || !strings.Contains(v.Error, "exited 7") || v.Serving == nil || v.Serving.Key != "k1" {
		t.Errorf("a failure after a ready one: %+v", v)
	}
	words := strings.Join(v.Words(), "\n")
	for _, want := range []string{"prepared: FAILED on c2", "exited 7", "sandbar env logs", "prepared: ready, made", "of which 20s its commands"} {
		if !strings.Contains(words, want) {
			t.Errorf("the words lack %q:\n%s", want, words)
		}
	}
	b, err := st.Begin("3", "k3")
	if err != nil {
		t.Fatal(err)
	}
	b.SetProgress(prepared.Progress{Commit: "c3", Step: "running onCreateCommand", Started: time.Now()})
	v, _ = f.m.preparedView(proj)
	if v.State != PrepPreparing || v.Step != "running onCreateCommand" || v.Key != "k3" || v.Log != b.LogPath() || v.Serving == nil {
		t.Errorf("while preparing: %+v", v)
	}
	all, err := f.m.PreparedEnvironments(context.Background())
	if err == nil && len(all) != 0 {
		t.Errorf("PreparedEnvironments lists %d of a project not in the store", len(all))
	}
}
