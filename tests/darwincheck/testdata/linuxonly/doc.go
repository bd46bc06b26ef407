// Package linuxonly has a type error in a Linux-only file; darwincheck must
// not see it.
package linuxonly
