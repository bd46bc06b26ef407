// Package features fetches the devcontainer features a devcontainer.json
// names, on the host, before a session's VM boots: an OCI artifact from a
// registry (the spec's "features distribution": a manifest whose layer is
// a tar of the feature's folder) or a "./folder" of the trusted
// repository files. It reads each feature's devcontainer-feature.json,
// applies option defaults, refuses an option the feature does not have,
// bounds what it reads, and orders the install (dependsOn, installsAfter,
// overrideFeatureInstallOrder).
//
// It runs nothing: installing is the session's (app/session/features.go),
// which sends each feature's files to the VM and runs its install.sh
// there as root. Nothing here runs a feature's script on the host.
package features
