package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

// TestTrashCommands: `sandbar rm` moves a session to the trash, `sandbar
// trash ls` shows it, `restore` brings it back, and `rm --purge` and
// `trash empty` delete for good, through an engine.
func TestTrashCommands(t *testing.T) {
	env := sessiontest.New(t)
	r, cli, stdout, _ := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := env.Repo(t, "trash répo")
	var ids []string
	for range 2 {
		s, err := r.Start(ctx, session.Options{Repo: repo, MemoryMiB: 512, Agent: sessiontest.Shell("echo done")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Wait(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	run := func(args ...string) (string, error) {
		stdout.Reset()
		err := Run(ctx, cli, args)
		return stdout.String(), err
	}

	out, err := run("trash", "ls")
	if err != nil || !strings.Contains(out, "the trash is empty") {
		t.Errorf("trash ls of an empty trash: %v\n%s", err, out)
	}
	out, err = run("rm", ids[0][:6])
	if err != nil || !strings.Contains(out, "moved session "+ids[0]+" to the trash: `sandbar trash restore "+ids[0][:6]+"` brings it back (for 7 days)") {
		t.Fatalf("rm: %v\n%s", err, out)
	}
	out, err = run("trash", "ls")
	if err != nil || !strings.Contains(out, ids[0]) || !strings.Contains(out, "trash répo") || !strings.Contains(out, "in 6 days") ||
		!strings.Contains(out, "1 session, ") {
		t.Errorf("trash ls: %v\n%s", err, out)
	}
	out, err = run("trash", "ls", "--json")
	var listed []session.Trashed
	if err != nil || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].ID != ids[0] || listed[0].Bytes <= 0 {
		t.Errorf("trash ls --json: %v\n%s", err, out)
	}
	if out, _ := run("ls"); strings.Contains(out, ids[0]) {
		t.Errorf("ls shows a session in the trash:\n%s", out)
	}

	out, err = run("trash", "restore", ids[0][:6])
	if err != nil || !strings.Contains(out, "restored session "+ids[0]) {
		t.Fatalf("trash restore: %v\n%s", err, out)
	}
	if out, _ := run("ls"); !strings.Contains(out, ids[0][:6]) {
		t.Errorf("ls after the restore lacks it:\n%s", out)
	}
	if _, err := run("trash", "restore", ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("restore one not in the trash: %v", err)
	}

	out, err = run("rm", "--purge", ids[0])
	if err != nil || !strings.Contains(out, "deleted session "+ids[0]+" for good") {
		t.Errorf("rm --purge: %v\n%s", err, out)
	}
	if tr, _ := r.Trash(ctx); len(tr) != 0 {
		t.Errorf("rm --purge left it in the trash: %+v", tr)
	}
	if _, err := run("rm", ids[1]); err != nil {
		t.Fatal(err)
	}
	out, err = run("trash", "empty")
	if err != nil || !strings.Contains(out, "deleted 1 session for good") {
		t.Errorf("trash empty: %v\n%s", err, out)
	}
	if ss, _ := r.List(ctx); len(ss) != 0 {
		t.Errorf("sessions left: %+v", ss)
	}
	var u UsageError
	if _, err := run("trash", "restore"); !errors.As(err, &u) {
		t.Errorf("trash restore without an id: %v, want a usage error", err)
	}
}
