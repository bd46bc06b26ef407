package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A person's decisions about a repository's settings files (see
// session.RepoTrust): which content, by hash, they trusted, and which
// they chose to ignore.
const (
	// TrustTrusted is content the person trusted: Sandbar uses it.
	TrustTrusted = "trusted"
	// TrustIgnored is content the person chose not to use: Sandbar
	// does not, and does not ask again until it changes.
	TrustIgnored = "ignored"
)

// RepoTrust is one decision about one kind of a project's repository
// settings ("network", "include", "environment").
type RepoTrust struct {
	Kind     string
	Decision string // TrustTrusted or TrustIgnored
	// Hash is the SHA-256, in hex, of the content decided on.
	Hash string
	// Content is the content decided on, as its kind writes it down, so
	// that a change can be shown as a diff from it.
	Content []byte
	Decided time.Time
}

// RepoTrusts returns the decisions recorded for a project's repository
// settings, by kind and decision.
func (s *Store) RepoTrusts(ctx context.Context, projectID int64) ([]RepoTrust, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT kind, decision, hash, content, decided FROM repo_trust WHERE project_id = ? ORDER BY kind, decision", projectID)
	if err != nil {
		return nil, s.fail("read the trust of the project's repository settings", err)
	}
	defer rows.Close()
	var out []RepoTrust
	for rows.Next() {
		var t RepoTrust
		var at int64
		if err := rows.Scan(&t.Kind, &t.Decision, &t.Hash, &t.Content, &at); err != nil {
			return nil, s.fail("read the trust of the project's repository settings", err)
		}
		t.Decided = fromNanos(at)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read the trust of the project's repository settings", err)
	}
	return out, nil
}

// SetRepoTrust records a decision, replacing the project's earlier one of
// the same kind and decision. Trusting content that was ignored clears
// the ignore, and ignoring content that was trusted withdraws the trust:
// a kind has one current answer for one hash.
func (s *Store) SetRepoTrust(ctx context.Context, projectID int64, t RepoTrust) error {
	if t.Kind == "" || t.Hash == "" || (t.Decision != TrustTrusted && t.Decision != TrustIgnored) {
		return fmt.Errorf("record trust: kind %q, decision %q, hash %q: want a kind, trusted or ignored, and a hash", t.Kind, t.Decision, t.Hash)
	}
	if t.Decided.IsZero() {
		t.Decided = time.Now()
	}
	if t.Content == nil {
		t.Content = []byte{}
	}
	op := fmt.Sprintf("record the %s of the project's %s settings", t.Decision, t.Kind)
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, "SELECT 1 FROM projects WHERE id = ?", projectID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return errorf(ErrNotFound, "no project %d: `sandbar project ls` lists them", projectID)
		} else if err != nil {
			return s.fail(op, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM repo_trust WHERE project_id = ? AND kind = ? AND decision != ? AND hash = ?", projectID, t.Kind, t.Decision, t.Hash); err != nil {
			return s.fail(op, err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO repo_trust (project_id, kind, decision, hash, content, decided) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (project_id, kind, decision) DO UPDATE SET hash = excluded.hash, content = excluded.content, decided = excluded.decided`,
			projectID, t.Kind, t.Decision, t.Hash, t.Content, nanos(t.Decided))
		if err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}
