package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// draftAgent leaves work in its clone without committing it.
const draftAgent = `echo draft > draft.txt && echo changed >> README.md && echo left`

func TestCommitMessage(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, c := range []struct{ prompt, want string }{
		{"Fix the parser\n\nIt fails on empty input.\n", "Fix the parser\n\nIt fails on empty input.\n\nSandbar committed"},
		{"  one line  ", "one line\n\nSandbar committed"},
		{"", "Work left uncommitted by Sandbar session abcdef\n\nSandbar committed"},
		{long + "\nmore", strings.Repeat("x", 71) + "…\n\n" + long + "\nmore\n\nSandbar committed"},
	} {
		got := commitMessage(c.prompt, "abcdef0123")
		if !strings.HasPrefix(got, c.want) || !strings.HasSuffix(got, "\n\nSandbar-Session: abcdef0123\n") {
			t.Errorf("commitMessage(%q) = %q, want it to start %q and end with the trailer", c.prompt, got, c.want)
		}
	}
}

// TestAutoCommitThenMergeInto: a session that ends with uncommitted
// work has it committed on its branch, with the prompt as the message,
// and says so; "Merge into main" then brings it into the checked-out
// branch and its working tree, and the merge is recorded.
func TestAutoCommitThenMergeInto(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", draftAgent}}, MemoryMiB: 512,
		Prompt: "Write a draft\n\nKeep it short."})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	waitFor(t, f, s.ID, `committed the uncommitted work (2 files) on `+s.Branch)
	waitFor(t, f, s.ID, `"Write a draft"`)

	tg, err := f.m.MergeTarget(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Into != "main" || tg.Nothing != "" || tg.IntoDone != "" || tg.BranchDone != "" || tg.AutoCommit == "" {
		t.Fatalf("MergeTarget = %+v, want main, something to merge, and the auto-commit", tg)
	}
	res, err := f.m.Merge(ctx, s.ID, MergeOptions{Into: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Into != "main" || !res.FastForward || res.Commit != tg.AutoCommit || len(res.Uncommitted) != 0 {
		t.Errorf("Merge = %+v, want main fast-forwarded to %s", res, tg.AutoCommit)
	}
	if got := git(t, f.repo, "log", "-1", "--format=%an|%B", "main"); !strings.HasPrefix(got, "Sandbar|Write a draft\n\nKeep it short.") {
		t.Errorf("main's last commit = %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(f.repo, "draft.txt")); string(b) != "draft\n" {
		t.Errorf("draft.txt in the repository = %q", b)
	}
	if st := git(t, f.repo, "status", "--porcelain"); st != "" {
		t.Errorf("the repository is not clean after the merge: %q", st)
	}
	got, _ := f.m.Get(ctx, s.ID)
	if m := got.Merged; m.Into != "main" || m.Branch || m.Commit != res.Commit || m.Work != tg.AutoCommit || m.Time.IsZero() {
		t.Errorf("recorded merge = %+v", m)
	}
	tg, _ = f.m.MergeTarget(ctx, s.ID)
	if tg.IntoDone != "the session's work is already in main" {
		t.Errorf("after the merge, IntoDone = %q", tg.IntoDone)
	}
	if _, err := f.m.Merge(ctx, s.ID, MergeOptions{Into: true}); !errors.Is(err, workspace.ErrNothingToMerge) {
		t.Errorf("merging again: %v, want ErrNothingToMerge", err)
	}
	// Its work is in the repository: it may be deleted.
	if err := f.m.Remove(ctx, s.ID, false); err != nil {
		t.Errorf("remove after the merge: %v", err)
	}
}

// TestMergeRefusesNothing: a session that changed nothing, or whose
// changes were left uncommitted with the setting off, has nothing to
// merge: both actions refuse, saying why, and no branch appears.
func TestMergeRefusesNothing(t *testing.T) {
	for _, c := range []struct {
		name, agent, off, why string
	}{
		{"no changes", "true", "", "nothing to merge: the session made no changes"},
		{"uncommitted, setting off", draftAgent, "off", "the session's changes (2 files) were not committed when it ended, and committing them is off in Settings"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if c.off != "" {
				if err := f.st.SetSetting(ctx, store.SettingAutoCommit, c.off); err != nil {
					t.Fatal(err)
				}
			}
			s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", c.agent}}, MemoryMiB: 512})
			if err != nil {
				t.Fatal(err)
			}
			f.wait(t, s.ID)
			head := git(t, f.repo, "rev-parse", "HEAD")
			tg, err := f.m.MergeTarget(ctx, s.ID)
			if err != nil || !strings.Contains("nothing to merge: "+tg.Nothing, c.why) {
				t.Errorf("MergeTarget = %+v, %v, want Nothing saying %q", tg, err, c.why)
			}
			for _, o := range []MergeOptions{{}, {Into: true}} {
				_, err := f.m.Merge(ctx, s.ID, o)
				if !errors.Is(err, workspace.ErrNothingToMerge) || !strings.Contains(err.Error(), c.why) {
					t.Errorf("Merge(%+v) = %v, want ErrNothingToMerge saying %q", o, err, c.why)
				}
			}
			if b := git(t, f.repo, "branch", "--list", s.Branch); b != "" {
				t.Errorf("a refused merge created %q", b)
			}
			if got := git(t, f.repo, "rev-parse", "HEAD"); got != head {
				t.Errorf("a refused merge moved HEAD to %s", got)
			}
			if got, _ := f.m.Get(ctx, s.ID); !got.Merged.IsZero() {
				t.Errorf("a refused merge was recorded: %+v", got.Merged)
			}
		})
	}
}

// TestMergeIntoDirtyTree: the person's uncommitted changes stop a merge
// into their branch; "Create branch" still works and leaves them alone.
func TestMergeIntoDirtyTree(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", draftAgent}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("mine\n"), 0o644)
	head := git(t, f.repo, "rev-parse", "HEAD")
	_, err = f.m.Merge(ctx, s.ID, MergeOptions{Into: true})
	if !errors.Is(err, workspace.ErrDirtyTree) || !strings.Contains(err.Error(), "your working tree has uncommitted changes in 1 file (README.md): commit or stash them first") {
		t.Errorf("Merge into a dirty tree = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.repo, "README.md")); string(b) != "mine\n" || git(t, f.repo, "rev-parse", "HEAD") != head {
		t.Errorf("a refused merge touched the repository: README.md %q", b)
	}
	res, err := f.m.Merge(ctx, s.ID, MergeOptions{})
	if err != nil || !res.Created {
		t.Fatalf("Create branch = %+v, %v", res, err)
	}
	if got, _ := f.m.Get(ctx, s.ID); !got.Merged.Branch || got.Merged.Into != s.Branch {
		t.Errorf("recorded merge = %+v", got.Merged)
	}
	if b, _ := os.ReadFile(filepath.Join(f.repo, "README.md")); string(b) != "mine\n" {
		t.Errorf("creating the branch touched README.md: %q", b)
	}
}

// TestMergeIntoAcceptsOnlyReviewedSteering: a running session's merge
// into is refused for its .envrc and names it; before the person accepts,
// the agent adds a .gitattributes. Accepting then brings in nothing the
// person was not shown: refused again, naming .gitattributes; accepted
// once more (the person saw it), it merges (a hostile review's finding).
func TestMergeIntoAcceptsOnlyReviewedSteering(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	agent := `echo 'echo hi' > .envrc && git add .envrc && git commit -qm envrc && echo up; while :; do read -r line || sleep 1; done`
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", agent}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	_, err = f.m.Merge(ctx, s.ID, MergeOptions{Into: true})
	if !errors.Is(err, workspace.ErrSteering) || !strings.Contains(err.Error(), ".envrc") {
		t.Fatalf("Merge into with a new .envrc = %v, want ErrSteering naming it", err)
	}
	var out strings.Builder
	if res, err := f.m.Exec(ctx, s.ID, ExecRequest{Argv: []string{"sh", "-c", `echo '* filter=lfs' > .gitattributes && git add .gitattributes && git commit -qm attrs`}}, &out, &out); err != nil || res.Code != 0 {
		t.Fatalf("commit .gitattributes: %v %+v %s", err, res, out.String())
	}
	head := git(t, f.repo, "rev-parse", "HEAD")
	_, err = f.m.Merge(ctx, s.ID, MergeOptions{Into: true, AcceptSteering: true})
	if !errors.Is(err, workspace.ErrSteering) || !strings.Contains(err.Error(), ".gitattributes") || !strings.Contains(err.Error(), "after you were shown them") {
		t.Fatalf("accepting what was shown, with a .gitattributes added since = %v, want ErrSteering naming it", err)
	}
	if _, err := os.Stat(filepath.Join(f.repo, ".gitattributes")); !errors.Is(err, os.ErrNotExist) || git(t, f.repo, "rev-parse", "HEAD") != head {
		t.Fatalf("the refused merge changed the repository: %v", err)
	}
	if _, err := f.m.Merge(ctx, s.ID, MergeOptions{Into: true, AcceptSteering: true}); err != nil {
		t.Fatalf("accepting what was shown: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(f.repo, ".envrc")); err != nil || string(b) != "echo hi\n" {
		t.Errorf(".envrc after the merge: %q %v", b, err)
	}
}
