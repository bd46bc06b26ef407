package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
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
	// kept is an environment that keeps a record of what it was made
	// from, so it can serve as it was made (prepOrigin).
	kept := func(key, base, commit string) prepared.Env {
		e := ready(key, base, commit)
		e.Origin = []byte(`{}`)
		return e
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
		previous, warn, fail bool
	}{
		{name: "nothing yet: prepare and wait", prepare: true, wait: true},
		{name: "nothing yet, being prepared: join and wait", running: true, prepare: true, wait: true},
		{name: "the key's own", all: []prepared.Env{ready("k1", "b", "c1"), ready("k0", "b", "c0")}, serve: "k1"},
		{name: "another commit's: it serves with updateContentCommand, the key's own is made for the next",
			all: []prepared.Env{ready("k0", "b", "c0")}, serve: "k0", update: true, prepare: true},
		{name: "another commit's while the key's is being made: it serves, no wait",
			all: []prepared.Env{ready("k0", "b", "c0")}, running: true, serve: "k0", update: true, prepare: true},
		{name: "another file's (another base key) that keeps no record of it never serves",
			all: []prepared.Env{ready("x0", "other", "c1")}, prepare: true, wait: true},
		{name: "the file changed: the previous one serves as it was made while the new one is prepared",
			all: []prepared.Env{kept("p0", "other", "c0")}, serve: "p0", previous: true, update: true, prepare: true},
		{name: "the file changed, the new one being made: the previous one serves, no wait",
			all: []prepared.Env{kept("p0", "other", "c0")}, running: true, serve: "p0", previous: true, update: true, prepare: true},
		{name: "the newest previous one serves",
			all: []prepared.Env{kept("p1", "other", "c0"), kept("p0", "older", "c0")}, serve: "p1", previous: true, update: true, prepare: true},
		{name: "the same file's on another commit comes before a previous file's",
			all: []prepared.Env{kept("p0", "other", "c0"), ready("k0", "b", "c0")}, serve: "k0", update: true, prepare: true},
		{name: "the changed file's failed: the previous one serves with a warning, and is not made again",
			all: []prepared.Env{failed("k1", "b", "c1"), kept("p0", "other", "c0")}, serve: "p0", previous: true, update: true, warn: true},
		{name: "a previous one outside the session's history never serves",
			all: []prepared.Env{kept("px", "other", "x0")}, prepare: true, wait: true},
		{name: "the key failed, an older one serves with a warning",
			all: []prepared.Env{failed("k1", "b", "c1"), ready("k0", "b", "c0")}, serve: "k0", update: true, warn: true},
		{name: "the key failed, nothing serves: the session fails",
			all: []prepared.Env{failed("k1", "b", "c1")}, fail: true},
		{name: "the key failed beside its ready one (a failed remake): the ready one serves",
			all: []prepared.Env{failed("k1", "b", "c1"), ready("k1", "b", "c1")}, serve: "k1"},
		{name: "a failed key is made again once asked (running)",
			all: []prepared.Env{failed("k1", "b", "c1")}, running: true, prepare: true, wait: true},
		// c1's history holds c0, not x0 (a branch the session's commit
		// does not descend from: an agent's merged branch, say).
		{name: "an environment of a commit outside the session's history never serves",
			all: []prepared.Env{ready("kx", "b", "x0")}, prepare: true, wait: true},
		{name: "outside the history while the key's is being made: wait for it",
			all: []prepared.Env{ready("kx", "b", "x0")}, running: true, prepare: true, wait: true},
		{name: "the newest of the base key is outside the history: an older one in it serves",
			all: []prepared.Env{ready("kx", "b", "x0"), ready("k0", "b", "c0")}, serve: "k0", update: true, prepare: true},
		{name: "the key failed and only an environment outside the history is ready: the session fails",
			all: []prepared.Env{failed("k1", "b", "c1"), ready("kx", "b", "x0")}, fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chooseEnv(tc.all, "k1", "b", "c1", tc.running, func(commit string) bool { return commit == "c0" },
				func(e *prepared.Env) bool { return e.Origin != nil })
			serve := ""
			if c.Serve != nil {
				serve = c.Serve.Key
			}
			if serve != tc.serve || c.Update != tc.update || c.Prepare != tc.prepare || c.Wait != tc.wait || c.Previous != tc.previous ||
				(c.Warning != "") != tc.warn || (c.Fail != "") != tc.fail {
				t.Errorf("chooseEnv = serve %q update %v prepare %v wait %v previous %v warning %q fail %q", serve, c.Update, c.Prepare, c.Wait, c.Previous, c.Warning, c.Fail)
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

// TestStepOutputManyLines: a preparing machine's output is the guest's
// bytes; one chunk of nothing but line breaks (the guest sends up to
// 256 KiB at once) must cost the host one pass, not a copy of the rest
// of the chunk per line.
func TestStepOutputManyLines(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "prepare.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := &stepOutput{log: &prepLog{f: f}, tail: boundedTail{max: setupTail}}
	chunk := bytes.Repeat([]byte("\n"), 64<<10)
	allocs := testing.AllocsPerRun(3, func() { out.Write(chunk) })
	if allocs > 16 {
		t.Fatalf("a 64 KiB chunk of empty lines took %.0f allocations: the output is copied per line", allocs)
	}
	// Lines still reach the log, cut and whole.
	out.Write([]byte("one\r\ntwo\n" + strings.Repeat("x", maxSetupLine+10) + "\nthree"))
	out.flush()
	b, _ := os.ReadFile(f.Name())
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 4 || lines[0] != "one" || lines[1] != "two" || len(lines[2]) != maxSetupLine || lines[3] != "three" {
		t.Fatalf("log lines %q", lines)
	}
}

// TestRemovePreparedFailedRemake: a key's ready environment and the
// failed remake kept beside it share the key. Each is removed by its
// own Name, the failure's removal never takes the ready one, and the
// ready one a session boots on is refused.
func TestRemovePreparedFailedRemake(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	proj, _, err := f.m.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	st := f.m.preparedStore()
	b, err := st.Begin(envName(proj.ID), "k1")
	if err != nil {
		t.Fatal(err)
	}
	writeJSONFile(b.Disk(), "disk")
	ready, err := b.Finish(prepared.Env{BaseKey: "b", Commit: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if b, err = st.Begin(envName(proj.ID), "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fail(prepared.Env{BaseKey: "b", Commit: "c1"}, errors.New("postCreateCommand exited 7")); err != nil {
		t.Fatal(err)
	}
	all, _ := f.m.PreparedEnvironments(ctx)
	names := map[string]string{}
	for _, e := range all {
		names[e.State] = e.Name
	}
	if len(all) != 2 || names[PrepReady] != "k1" || names[PrepFailed] != "k1"+prepared.FailedSuffix {
		t.Fatalf("listed %+v", all)
	}
	// A session boots on the ready one.
	dir := f.paths.SessionDir("s1")
	os.MkdirAll(filepath.Dir(dir.PreparedEnv()), 0o700)
	if err := writeJSONFile(dir.PreparedEnv(), preparedRecord{Path: ready.Path, Key: "k1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.m.RemovePreparedEnvironment(ctx, proj.Path, "k1"); !errors.Is(err, ErrState) {
		t.Errorf("removing the ready one a session boots on: %v", err)
	}
	if err := f.m.RemovePreparedEnvironment(ctx, proj.Path, names[PrepFailed]); err != nil {
		t.Fatalf("removing the failed remake: %v", err)
	}
	if _, err := os.Stat(ready.Path); err != nil {
		t.Fatalf("removing the failure took the ready one: %v", err)
	}
	if all, _ := f.m.PreparedEnvironments(ctx); len(all) != 1 || all[0].State != PrepReady {
		t.Fatalf("after: %+v", all)
	}
}

// TestRemoveProjectRemovesPrepared: a removed project's prepared
// environments go with it; the store would give a project added later
// the same id, and its sessions would boot on them.
func TestRemoveProjectRemovesPrepared(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	proj, _, err := f.m.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	st := f.m.preparedStore()
	b, err := st.Begin(envName(proj.ID), "k1")
	if err != nil {
		t.Fatal(err)
	}
	writeJSONFile(b.Disk(), "disk")
	if _, err := b.Finish(prepared.Env{BaseKey: "b", Commit: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.m.RemoveProject(ctx, proj.Path); err != nil {
		t.Fatal(err)
	}
	if all, _ := st.List(envName(proj.ID)); len(all) != 0 {
		t.Errorf("the removed project's prepared environments are kept: %+v", all)
	}
	if _, err := os.Stat(filepath.Join(st.Dir, envName(proj.ID))); err == nil {
		t.Error("the removed project's folder of prepared environments is kept")
	}
}
