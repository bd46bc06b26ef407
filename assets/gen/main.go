// Command gen draws Sandbar's icons into a directory, the assets
// directory by default:
//
//	go generate ./assets
//	go run ./assets/gen -dir /tmp/icons
//
// The drawing itself is package sandbar/assets/internal/icons; this
// command only writes it out.
package main

import (
	"flag"
	"fmt"
	"os"

	"sandbar/assets/internal/icons"
)

func main() {
	dir := flag.String("dir", ".", "directory to write the PNG files into")
	flag.Parse()
	if err := icons.WriteAll(*dir); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}
