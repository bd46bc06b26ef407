package session

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"sandbar/app/env/prepared"
	"sandbar/app/store"
)

// What a window and `sandbar env` show of a project's prepared
// environments (prepared.go makes them): the state of the newest
// preparation, the environment sessions boot on now, and every one kept
// on this machine for Settings → Storage.

// Prepared states (PreparedView.State).
const (
	// PrepNone: nothing prepared yet, nor being prepared; the next
	// session (or `sandbar env build`) prepares it.
	PrepNone = "none"
	// PrepPreparing: a machine is preparing it now (Step says what).
	PrepPreparing = "preparing"
	// PrepReady: the newest preparation is ready.
	PrepReady = "ready"
	// PrepFailed: the newest preparation failed (Error, Log); an older
	// ready one may still serve (Serving).
	PrepFailed = "failed"
)

// PreparedView is the state of a project's prepared environment.
type PreparedView struct {
	// State is PrepNone, PrepPreparing, PrepReady or PrepFailed: that of
	// the newest preparation, running or done.
	State string `json:"state"`
	// Step is what a running preparation does now, in words ("running
	// postCreateCommand"); Started when it began.
	Step    string    `json:"step,omitempty"`
	Started time.Time `json:"started,omitzero"`
	// Key and Commit are the newest preparation's (see
	// devcontainer.Key); KeyShort the first 12 characters of Key.
	Key      string `json:"key,omitempty"`
	KeyShort string `json:"key_short,omitempty"`
	Commit   string `json:"commit,omitempty"`
	// Made is when the newest preparation ended (zero while preparing).
	Made time.Time `json:"made,omitzero"`
	// Error is why the newest preparation failed: the command, its exit
	// code and its log's tail.
	Error string `json:"error,omitempty"`
	// Log is the newest preparation's log file (growing while it runs):
	// plain text written by the preparing machine, for a person to read,
	// escaped (app/cli/termsafe) before a terminal shows it.
	Log string `json:"log,omitempty"`
	// Serving is the ready environment the project's next session boots
	// on (the newest ready one), nil when there is none.
	Serving *PreparedEnv `json:"serving,omitempty"`
}

// PreparedEnv is one prepared environment kept on this machine.
type PreparedEnv struct {
	ProjectID   int64  `json:"project_id"`
	ProjectName string `json:"project_name,omitempty"`
	Key         string `json:"key"`
	KeyShort    string `json:"key_short"`
	BaseKey     string `json:"base_key"`
	Commit      string `json:"commit"`
	// Image is the image it was prepared on ("" for Sandbar's own).
	Image string `json:"image,omitempty"`
	// State is PrepReady or PrepFailed; Error is why a failed one failed.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Made is when it was finished; Took how long preparing it took, of
	// which SetupTook ran the environment's own commands.
	Made      time.Time     `json:"made"`
	Took      time.Duration `json:"took"`
	SetupTook time.Duration `json:"setup_took"`
	// Size is its disk's bytes on this machine's disk; LastUse when a
	// session last booted on it.
	Size    int64     `json:"size"`
	LastUse time.Time `json:"last_use"`
	// Path is its disk ("" for a failed one); Log its preparing log.
	Path string `json:"path,omitempty"`
	Log  string `json:"log,omitempty"`
}

// shortKey is the form of a key a person reads.
func shortKey(k string) string { return k[:min(12, len(k))] }

// preparedStore is this machine's store of prepared environments.
func (m *Manager) preparedStore() *prepared.Store {
	return &prepared.Store{Dir: m.cfg.Paths.PreparedEnvs()}
}

// envName is a project's folder name in the store.
func envName(projectID int64) string { return strconv.FormatInt(projectID, 10) }

func preparedEnv(p store.Project, e prepared.Env) PreparedEnv {
	return PreparedEnv{
		ProjectID: p.ID, ProjectName: p.Name, Key: e.Key, KeyShort: shortKey(e.Key), BaseKey: e.BaseKey, Commit: e.Commit,
		Image: e.Image, State: e.State, Error: e.Error, Made: e.Made, Took: e.Took, SetupTook: e.SetupTook,
		Size: e.Size, LastUse: e.LastUse, Path: e.Path, Log: e.Log,
	}
}

// preparedView reads the state of project p's prepared environment
// from the disk: a running preparation (any process's), else the newest
// one kept, and the newest ready one.
func (m *Manager) preparedView(p store.Project) (PreparedView, error) {
	st := m.preparedStore()
	v := PreparedView{State: PrepNone}
	all, err := st.List(envName(p.ID))
	if err != nil {
		return v, err
	}
	for _, e := range all { // newest first
		if e.State == prepared.StateReady {
			pe := preparedEnv(p, e)
			v.Serving = &pe
			break
		}
	}
	if len(all) > 0 {
		e := all[0]
		v.State, v.Key, v.KeyShort, v.Commit, v.Error, v.Log, v.Made = e.State, e.Key, shortKey(e.Key), e.Commit, e.Error, e.Log, e.Made
	}
	building, err := st.Building(envName(p.ID))
	if err != nil {
		return v, err
	}
	if len(building) > 0 {
		b := building[0]
		v.State, v.Step, v.Started, v.Key, v.KeyShort, v.Commit, v.Error, v.Log, v.Made = PrepPreparing, b.Step, b.Started, b.Key, shortKey(b.Key), b.Commit, "", b.Log, time.Time{}
	}
	return v, nil
}

// PreparedEnvironments lists every prepared environment kept on this
// machine, of every project, the most recently made first within a
// project: what Settings → Storage lists.
func (m *Manager) PreparedEnvironments(ctx context.Context) ([]PreparedEnv, error) {
	projects, err := m.cfg.Store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	st := m.preparedStore()
	var out []PreparedEnv
	for _, p := range projects {
		all, err := st.List(envName(p.ID))
		if err != nil {
			return nil, err
		}
		for _, e := range all {
			out = append(out, preparedEnv(p, e))
		}
	}
	return out, nil
}

// RemovePreparedEnvironment deletes one prepared environment of a
// project (by its key or a unique prefix of it). One a session boots on
// is refused: remove or stop that session first.
func (m *Manager) RemovePreparedEnvironment(ctx context.Context, projectRef, key string) error {
	p, err := m.findProject(ctx, projectRef)
	if err != nil {
		return err
	}
	st := m.preparedStore()
	all, err := st.List(envName(p.ID))
	if err != nil {
		return err
	}
	var found []prepared.Env
	for _, e := range all {
		if key != "" && len(key) <= len(e.Key) && e.Key[:len(key)] == key {
			found = append(found, e)
		}
	}
	switch {
	case len(found) == 0:
		return fmt.Errorf("project %s has no prepared environment %q (sandbar env lists them): %w", p.Name, key, ErrNotFound)
	case len(found) > 1:
		return fmt.Errorf("%q names %d prepared environments of project %s: give more of the key: %w", key, len(found), p.Name, ErrBadOptions)
	}
	e := found[0]
	if e.Path != "" && m.preparedInUse()[e.Path] {
		return fmt.Errorf("a session of project %s boots on the prepared environment %s: remove that session first: %w", p.Name, shortKey(e.Key), ErrState)
	}
	return st.Remove(e.Project, e.Key)
}
