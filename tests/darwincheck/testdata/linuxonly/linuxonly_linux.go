//go:build linux

package linuxonly

// broken has a type error that only a Linux build would see.
var broken int = "not an int"
