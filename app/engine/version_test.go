package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/config"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// fakeEngine answers every connection on p's socket with answer, given
// the client's first line, until the test ends.
func fakeEngine(t *testing.T, p config.Paths, answer func(first []byte) string) {
	t.Helper()
	os.MkdirAll(p.Home, 0o700)
	ln, err := net.Listen("unix", p.EngineSocket())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadBytes('\n')
			fmt.Fprintln(c, answer(line))
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
}

// TestHandshake: a client learns the engine's API version and pid when it
// connects, and refuses an engine of another version with what to do.
func TestHandshake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("same version", func(t *testing.T) {
		f := newFixture(t)
		serve(t, f)
		r, err := Dial(ctx, f.env.Paths)
		if err != nil {
			t.Fatal(err)
		}
		if r.API() != APIVersion || r.PID() != os.Getpid() {
			t.Errorf("the engine says API v%d, pid %d; want v%d, pid %d", r.API(), r.PID(), APIVersion, os.Getpid())
		}
	})

	t.Run("newer engine", func(t *testing.T) {
		p := config.Paths{Home: filepath.Join(t.TempDir(), "home")}
		var hello Hello
		fakeEngine(t, p, func(first []byte) string {
			json.Unmarshal(first, &hello)
			return fmt.Sprintf(`{"hello":{"api":%d,"pid":4242}}`, APIVersion+1)
		})
		_, err := Dial(ctx, p)
		if hello.Op != OpHello || hello.API != APIVersion {
			t.Errorf("the client's first line was %+v, want a hello with API v%d", hello, APIVersion)
		}
		want := fmt.Sprintf("the Sandbar engine running as process 4242 speaks API v%d, this sandbar v%d: quit that Sandbar and try again", APIVersion+1, APIVersion)
		var verr *VersionError
		if !errors.Is(err, ErrVersion) || !errors.As(err, &verr) || err.Error() != want {
			t.Fatalf("dial an engine of API v%d: %v\nwant: %s", APIVersion+1, err, want)
		}
		// Every call is refused the same way, before it is sent.
		c := &Client{Engine: func(ctx context.Context) (*Remote, error) { return &Remote{paths: p}, nil }}
		if _, err := c.Stop(ctx, "abc"); !errors.Is(err, ErrVersion) {
			t.Errorf("stop through an engine of another version: %v", err)
		}
	})

	t.Run("engine from before the handshake", func(t *testing.T) {
		p := config.Paths{Home: filepath.Join(t.TempDir(), "home")}
		fakeEngine(t, p, func([]byte) string {
			return `{"done":true,"error":"unknown operation \"hello\": is this Sandbar older than the one calling it?"}`
		})
		os.WriteFile(p.EngineLock(), []byte("777\n"), 0o600)
		_, err := Dial(ctx, p)
		want := fmt.Sprintf("the Sandbar engine running as process 777 speaks API v1, this sandbar v%d: quit that Sandbar and try again", APIVersion)
		if !errors.Is(err, ErrVersion) || err.Error() != want {
			t.Fatalf("dial an unversioned engine: %v\nwant: %s", err, want)
		}
	})

	t.Run("client from before the handshake", func(t *testing.T) {
		f := newFixture(t)
		serve(t, f)
		c, err := net.Dial("unix", f.env.Paths.EngineSocket())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintln(c, `{"op":"stop","id":"abc"}`)
		var fr frame
		if err := json.NewDecoder(c).Decode(&fr); err != nil {
			t.Fatal(err)
		}
		if !fr.Done || !strings.Contains(fr.Error, fmt.Sprintf("speaks API v%d", APIVersion)) || !strings.Contains(fr.Error, "try again") {
			t.Errorf("an unversioned client's call got %+v; want a refusal naming the API", fr)
		}
	})
}

// TestErrorCodes: each sentinel an engine returns is the same sentinel in
// its client.
func TestErrorCodes(t *testing.T) {
	for _, c := range errorCodes {
		err := fmt.Errorf("something: %w", c.err)
		got := &RemoteError{Msg: err.Error(), Sentinel: errorOf(codeOf(err))}
		if !errors.Is(got, c.err) {
			t.Errorf("%v crossed as %q and is no longer itself", c.err, codeOf(err))
		}
	}
	dirty := &workspace.DirtyError{Repo: "/r", Uncommitted: []string{"a"}}
	if code := codeOf(fmt.Errorf("rm: %w", dirty)); code != "dirty" || !errors.Is(&RemoteError{Sentinel: errorOf(code)}, session.ErrDirty) {
		t.Errorf("a dirty workspace crossed as %q", code)
	}
	if codeOf(errors.New("plain")) != "" || errors.Is(&RemoteError{Msg: "x"}, store.ErrNotFound) {
		t.Error("a plain error got a code")
	}
	// The sentinels callers test (the UI offers to overwrite a diverged
	// branch) are in the table.
	for _, want := range []error{workspace.ErrDiverged, workspace.ErrCheckedOut, session.ErrNotSaved, session.ErrLegacySession, workspace.ErrNotRepo} {
		if codeOf(fmt.Errorf("x: %w", want)) == "" {
			t.Errorf("%v has no code: it loses its identity across the socket", want)
		}
	}
	// An error that wraps several sentinels is each of them in the client.
	both := fmt.Errorf("merge: %w: %w", session.ErrState, workspace.ErrDiverged)
	f := frame{Done: true, Error: both.Error(), Code: codeOf(both), Codes: codesOf(both)}
	for _, want := range []error{session.ErrState, workspace.ErrDiverged} {
		if got := remoteError(f); !errors.Is(got, want) {
			t.Errorf("%v crossed as %q %q and is no longer %v", both, f.Code, f.Codes, want)
		}
	}
}
