// Package devcontainer reads a repository's devcontainer.json: it finds the
// file, parses its JSONC, checks every field Sandbar supports, and gives a
// plain model (Config) that the environment code turns into an image pull
// or build, features, lifecycle commands and limits. It also orders
// features the way the dev container spec does, and computes the key of a
// prepared environment.
//
// It is pure Go: it starts no VM, runs no command and opens no network
// connection. The repository is hostile data, so the file is found and read
// without following a link out of the repository, with a size bound, and
// nothing in it is interpreted on the host: ${localEnv:...} never reads the
// host's environment, a bind mount of a host path is refused, and commands
// are only described here, to be run inside the session's VM.
//
// Every bad field is an *Error naming the file, the line and the column,
// what is wrong and what to do. Fields Sandbar does not support are named
// in Config.Unsupported, never silently dropped.
package devcontainer
