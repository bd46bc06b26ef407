// Package wrongtype passes a string where vz wants a uint; darwincheck must
// fail it.
package wrongtype
