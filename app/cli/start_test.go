package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/imagebuild"
	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// TestStartChecksItsInputFirst: `sandbar start` in a folder that is no
// repository, or for a project there is none of, says so at once, on a
// fresh data directory, and builds no guest image first (the first build
// takes a while).
func TestStartChecksItsInputFirst(t *testing.T) {
	t.Run("not a repository", func(t *testing.T) {
		env, _ := testEnv(t)
		env.Images = &imagebuild.Builder{Paths: env.Paths}
		env.Sessions = func(context.Context) (session.Service, error) {
			t.Error("the sessions were opened for a folder that is no repository")
			return nil, errors.New("not wanted")
		}
		env.WorkDir = t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := Run(ctx, env, []string{"start", "--agent", "true"})
		if !errors.Is(err, workspace.ErrNotRepo) || !strings.Contains(err.Error(), env.WorkDir+" is not in a git repository") {
			t.Errorf("start in %s: %v, want that it is not a repository", env.WorkDir, err)
		}
		noImages(t, env)
	})
	t.Run("no such project", func(t *testing.T) {
		se := sessiontest.New(t)
		_, env, _, _ := engineFor(t, se)
		// The test environment's data directory has an images folder
		// already: the builder gets one of its own.
		env.Paths.Images = filepath.Join(t.TempDir(), "images")
		env.Images = &imagebuild.Builder{Paths: env.Paths}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := Run(ctx, env, []string{"start", "--agent", "true", "nosuchproject"})
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), `no project "nosuchproject"`) {
			t.Errorf("start nosuchproject: %v, want no such project", err)
		}
		noImages(t, env)
	})
}

// noImages fails t if the images folder of env's data directory exists.
func noImages(t *testing.T, env *Env) {
	t.Helper()
	if _, err := os.Stat(env.Paths.Images); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the images folder %s: %v; want none (no image built)", env.Paths.Images, err)
	}
}
