package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTrash: a session in the trash is left out of every read but the
// trash's, keeps its log lines and events, comes back as it was, and goes
// for good when deleted or when its project is removed.
func TestTrash(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	p, x := seed(t, s)
	if err := s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: "kept"}}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := s.TrashSession(ctx, x.ID, at); err != nil {
		t.Fatal(err)
	}
	if err := s.TrashSession(ctx, x.ID, at); !errors.Is(err, ErrNotFound) {
		t.Errorf("trash it twice: %v, want ErrNotFound", err)
	}
	if _, err := s.Session(ctx, x.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Session of a trashed one: %v, want ErrNotFound", err)
	}
	if _, err := s.FindSession(ctx, x.ID[:5]); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindSession of a trashed one: %v, want ErrNotFound", err)
	}
	if ss, err := s.Sessions(ctx, SessionFilter{}); err != nil || len(ss) != 0 {
		t.Errorf("Sessions lists the trash: %+v, %v", ss, err)
	}
	if _, err := s.UpdateSession(ctx, x.ID, func(*Session) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("update a trashed one: %v, want ErrNotFound", err)
	}
	tr, err := s.Trashed(ctx)
	if err != nil || len(tr) != 1 || tr[0].ID != x.ID || !tr[0].Deleted.Equal(at) || tr[0].Prompt != x.Prompt {
		t.Fatalf("Trashed: %+v, %v", tr, err)
	}
	if got, err := s.FindTrashed(ctx, x.ID[:4]); err != nil || got.ID != x.ID {
		t.Errorf("FindTrashed by prefix: %+v, %v", got, err)
	}
	if _, err := s.FindTrashed(ctx, "abc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindTrashed by 3 characters: %v, want ErrNotFound", err)
	}
	back, err := s.RestoreSession(ctx, x.ID)
	if err != nil || back.ID != x.ID || back.State != x.State || back.Prompt != x.Prompt {
		t.Fatalf("restore: %+v, %v", back, err)
	}
	if _, err := s.RestoreSession(ctx, x.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("restore one not in the trash: %v, want ErrNotFound", err)
	}
	if l, err := s.Logs(ctx, x.ID, 0, 0); err != nil || len(l) != 1 || l[0].Text != "kept" {
		t.Errorf("log lines after the trash: %+v, %v", l, err)
	}

	// Emptying is DeleteSession; a project goes with its trash.
	if err := s.TrashSession(ctx, x.ID, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveProject(ctx, p.ID); err != nil {
		t.Fatalf("remove a project whose only session is in the trash: %v", err)
	}
	if tr, err := s.Trashed(ctx); err != nil || len(tr) != 0 {
		t.Errorf("the trash after its project went: %+v, %v", tr, err)
	}
}
