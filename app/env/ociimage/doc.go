// Package ociimage pulls OCI and Docker images on the host and keeps each
// one as a read-only ext4 root file system, content-addressed by digest
// and shared by every project that uses it.
//
// A pull resolves a reference (a multi-arch index to the host's platform),
// streams its layers from the registry, flattens them top-down with
// go-containerregistry's mutate.Extract (whiteouts and opaque directories
// applied) and writes the result with hcsshim's tar2ext4, the converter
// the guest image uses. Nothing of an image is held whole in memory. An
// image the person has in a local Docker or Podman is taken from there.
//
// It is not the session's environment: which image a project uses, and
// booting on it, belong to the callers.
package ociimage
