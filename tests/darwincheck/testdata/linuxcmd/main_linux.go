// Command linuxcmd is built for Linux only, like sandbar-init; darwincheck
// must skip it, not report it.
package main

func main() {
	var broken int = "not an int"
	_ = broken
}
