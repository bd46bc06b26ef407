// Command rootbuild writes a Debian root (guest/image's WriteRoot or
// BuildRoot) for the end-to-end tests, out of their process: ./tests/
// runs under -race, which made reading Debian's index and writing the
// root seven times slower there (1m47s against 15s for the Essential
// set), minutes of CI's critical path. The options come as JSON on
// stdin; the root goes to stdout as a tar, or with -ext4 to that file.
// It is for tests only.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"sandbar/app/config"
	"sandbar/guest/image"
	"sandbar/guest/image/download"
)

// Options are the image.RootOptions a test may set.
type Options struct {
	Packages  []string          `json:"packages,omitempty"`
	Essential bool              `json:"essential,omitempty"`
	Without   []string          `json:"without,omitempty"`
	Links     map[string]string `json:"links,omitempty"`
	Files     []image.RootFile  `json:"files,omitempty"`
}

func main() {
	ext4 := flag.String("ext4", "", "write a read-only ext4 `file` rather than a tar to stdout")
	flag.Parse()
	if err := run(*ext4); err != nil {
		fmt.Fprintln(os.Stderr, "rootbuild:", err)
		os.Exit(1)
	}
}

func run(ext4 string) error {
	var o Options
	if err := json.NewDecoder(os.Stdin).Decode(&o); err != nil {
		return fmt.Errorf("the options on stdin: %w", err)
	}
	paths, err := config.Resolve(os.Getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	ro := image.RootOptions{Downloads: &download.Cache{Dir: paths.Downloads}, Packages: o.Packages,
		Essential: o.Essential, Without: o.Without, Links: o.Links, Files: o.Files}
	if ext4 != "" {
		return image.BuildRoot(ctx, ro, ext4)
	}
	return image.WriteRoot(ctx, ro, os.Stdout)
}
