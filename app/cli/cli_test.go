package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/config"
)

func testEnv(t *testing.T) (*Env, *bytes.Buffer) {
	t.Helper()
	home := t.TempDir()
	var out bytes.Buffer
	return &Env{
		Paths:   config.Paths{Home: home, Images: filepath.Join(home, "images with space ü"), Downloads: filepath.Join(home, "downloads")},
		Stdin:   strings.NewReader(""),
		Stdout:  &out,
		Stderr:  &out,
		WorkDir: home,
		Logger:  slog.New(slog.DiscardHandler),
		Version: "test",
	}, &out
}

func TestRun(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: nil, want: "image"},
		{args: []string{"help"}, want: "version"},
		{args: []string{"image"}, want: "build"},
		{args: []string{"version"}, want: "sandbar test\n"},
		{args: []string{"image", "ls"}, want: "no guest image yet: run `sandbar image build`"},
		{args: []string{"bogus"}, wantErr: "unknown command \"bogus\": run `sandbar help`"},
		{args: []string{"image", "bogus"}, wantErr: "unknown command \"image bogus\": run `sandbar image help`"},
		{args: []string{"image", "path", "extra"}, wantErr: "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			env, out := testEnv(t)
			err := Run(context.Background(), env, tt.args)
			if tt.wantErr != "" {
				var u UsageError
				if err == nil || !errors.As(err, &u) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Run(%q) = %v, want usage error containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run(%q): %v", tt.args, err)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("Run(%q) printed %q, want it to contain %q", tt.args, out.String(), tt.want)
			}
		})
	}
}

func TestImagePath(t *testing.T) {
	env, out := testEnv(t)
	if err := Run(context.Background(), env, []string{"image", "path"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != env.Paths.Images+"\n" {
		t.Errorf("image path printed %q, want %q", got, env.Paths.Images+"\n")
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 305 << 20: "305.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
