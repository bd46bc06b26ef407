package dockerbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// keyVersion changes when what a build makes from the same inputs does.
const keyVersion = 1

// KeyInputs are what a built image depends on. An unchanged build (the
// same Dockerfile and context at any commit, the same arguments, target
// and base images, the same builder) is not redone.
type KeyInputs struct {
	// Dockerfile is its path in the repository and DockerfileID its
	// content's id (a git blob id).
	Dockerfile, DockerfileID string
	// Context is the build context's path in the repository and
	// ContextID its tree's id.
	Context, ContextID string
	Args               map[string]string
	Target             string
	// Bases are the base images' digests, in the Dockerfile's order
	// (Dockerfile.Bases).
	Bases []string
	// Platform is os/arch of the build.
	Platform string
	// Builder names the builder (the guest image's buildah).
	Builder string
}

// Key is the inputs' hash, 64 hex digits.
func Key(k KeyInputs) string {
	names := make([]string, 0, len(k.Args))
	for n := range k.Args {
		names = append(names, n)
	}
	sort.Strings(names)
	args := make([][2]string, 0, len(names))
	for _, n := range names {
		args = append(args, [2]string{n, k.Args[n]})
	}
	b, _ := json.Marshal(struct {
		V                int
		Dockerfile, DfID string
		Context, CtxID   string
		Args             [][2]string
		Target           string
		Bases            []string
		Platform         string
		Builder          string
	}{keyVersion, k.Dockerfile, k.DockerfileID, k.Context, k.ContextID, args, k.Target, k.Bases, k.Platform, k.Builder})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
