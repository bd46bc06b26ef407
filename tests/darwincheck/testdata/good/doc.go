// Package good uses vz correctly; darwincheck must pass it.
package good
