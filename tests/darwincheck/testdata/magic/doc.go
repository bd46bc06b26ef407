// Package magic calls a function vz lacks; darwincheck must fail it.
package magic
