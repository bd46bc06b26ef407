package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sandbar/guest/protocol"
)

// ToolRoot is where Sandbar's own root is mounted, read-only, when the
// guest's root is another image's (a project's environment). sandbar-init
// binds the session's /proc, /dev, /tmp, /home and /workspace into it.
//
// Sandbar's tools (git for saves, changes, diffs and the branch's
// checkout; the sh, coreutils, find and sed the save script uses) run
// chrooted there rather than from the image with an explicit PATH and
// loader: git runs helpers by absolute paths compiled in
// (/usr/lib/git-core), sh finds coreutils on PATH, and each links against
// the glibc it was built with. A chroot gives them the whole Debian root
// they were built for, whatever the image holds (no git, an old one, a
// different libc), at the cost of five bind mounts at boot.
const ToolRoot = "/opt/sandbar/root"

// toolPath is the PATH of an exec with Sandbar's tools.
const toolPath = "/usr/local/bin:/usr/bin:/bin"

// The glibc dynamic loaders the agent's binary needs, by architecture.
var glibcLoaders = map[string]string{
	"amd64": "/lib64/ld-linux-x86-64.so.2",
	"arm64": "/lib/ld-linux-aarch64.so.1",
}

// MuslMessage is how a start on a musl image is refused.
const MuslMessage = "this image uses musl libc (Alpine?); the agent needs glibc: use a Debian or Ubuntu based image"

// checkLibc reports whether the agent's binaries, built for glibc, can
// run on the root at root for arch: the image must have glibc's dynamic
// loader. An image with musl's loader instead gets MuslMessage.
func checkLibc(root, arch string) error {
	loader, ok := glibcLoaders[arch]
	if !ok {
		return nil // an architecture Sandbar builds no image for
	}
	if _, err := os.Stat(filepath.Join(root, loader)); err == nil {
		return nil
	}
	for _, dir := range []string{"lib", "usr/lib"} {
		if m, _ := filepath.Glob(filepath.Join(root, dir, "ld-musl-*.so.1")); len(m) > 0 {
			return errors.New(MuslMessage)
		}
	}
	return fmt.Errorf("this image has no glibc dynamic loader (%s); the agent needs glibc: use a Debian or Ubuntu based image", loader)
}

// imageEnv returns the image's environment as the agent's gets it: the
// variables of im.Env, less those Sandbar sets for the agent's user
// (HOME, USER, LOGNAME), with PATH made of /opt/agent/bin (the agent
// Sandbar runs is Sandbar's, whatever the image calls by that name), then
// the image's PATH, then Sandbar's own entries the image's lacks.
func imageEnv(im *protocol.ImageConfig) map[string]string {
	if im == nil {
		return nil
	}
	env := map[string]string{}
	for _, kv := range im.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		switch k {
		case "HOME", "USER", "LOGNAME":
			continue
		}
		env[k] = v
	}
	var path []string
	seen := map[string]bool{}
	add := func(list string) {
		for _, d := range filepath.SplitList(list) {
			if d != "" && !seen[d] {
				seen[d] = true
				path = append(path, d)
			}
		}
	}
	add(agentBin)
	add(env["PATH"])
	add(basePath)
	env["PATH"] = strings.Join(path, string(filepath.ListSeparator))
	return env
}

// agentBin is where the agent's disk holds its programs.
const agentBin = "/opt/agent/bin"

// imageAgent chooses the agent's account on an image's root, for a
// workspace owned by uid: the image's user (im.User) when it is an
// account of that uid; else the image's account of that uid (node in
// Node's images, vscode in devcontainers', ubuntu in Ubuntu's); else a
// new account "agent". The agent is never root. notes say what was
// chosen and why, for the session's log.
func (s *session) imageAgent(uid int, im *protocol.ImageConfig) (User, []string, error) {
	var notes []string
	if im != nil && im.User != "" {
		want, _, _ := strings.Cut(im.User, ":")
		switch u, ok, err := s.cfg.Sys.LookupUser(want); {
		case err != nil:
			return User{}, nil, err
		case want == protocol.UserRoot || want == "0" || (ok && u.UID == 0):
			notes = append(notes, fmt.Sprintf("the image runs as root; the agent runs as a user of its own (uid %d) all the same", uid))
		case !ok:
			notes = append(notes, fmt.Sprintf("the image's user %q is not in its /etc/passwd; the agent runs as the workspace's owner (uid %d)", want, uid))
		case u.UID != uid:
			notes = append(notes, fmt.Sprintf("the image's user %s has uid %d, but the workspace belongs to uid %d; the agent runs as that uid", u.Name, u.UID, uid))
		case usableHome(u.Home):
			u, err := s.cfg.Sys.EnsureUser(u.Name, u.UID, u.Home)
			if err != nil {
				return User{}, nil, fmt.Errorf("set up the image's user %s: %w", want, err)
			}
			return u, append(notes, fmt.Sprintf("the agent runs as the image's user %s (uid %d)", u.Name, u.UID)), nil
		}
	}
	if u, ok, err := s.cfg.Sys.LookupUser(strconv.Itoa(uid)); err != nil {
		return User{}, nil, err
	} else if ok && usableHome(u.Home) && u.Name != protocol.UserRoot {
		u, err := s.cfg.Sys.EnsureUser(u.Name, u.UID, u.Home)
		if err != nil {
			return User{}, nil, fmt.Errorf("set up the image's user %s: %w", u.Name, err)
		}
		return u, append(notes, fmt.Sprintf("the agent runs as the image's user %s (uid %d)", u.Name, u.UID)), nil
	}
	u, err := s.cfg.Sys.EnsureUser(protocol.UserAgent, uid, "/home/agent")
	if err != nil {
		return User{}, nil, fmt.Errorf("add the agent's user to the image: %w", err)
	}
	return u, append(notes, fmt.Sprintf("the agent runs as %s (uid %d), added to the image's users", u.Name, u.UID)), nil
}

// usableHome reports whether an account's home can be the agent's: an
// absolute path that is not the root (which EnsureUser would give the
// agent) or a placeholder.
func usableHome(h string) bool {
	return filepath.IsAbs(h) && filepath.Clean(h) != "/" && h != "/nonexistent"
}

// sudoPrograms are where an image's sudo may be.
var sudoPrograms = []string{"usr/bin/sudo", "bin/sudo", "usr/sbin/sudo", "usr/local/bin/sudo"}

// imageSudo says whether the image at root has sudo, and if its
// /etc/sudoers reads the drop-in folder Sandbar's rule goes into; why is
// the note for the session's log when sudo cannot be given.
func imageSudo(root string) (ok bool, why string) {
	found := false
	for _, p := range sudoPrograms {
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil && fi.Mode().IsRegular() {
			found = true
			break
		}
	}
	if !found {
		return false, "sudo is not in the image: the agent cannot become root in its VM (the project allows it; install sudo in the image to use it)"
	}
	b, err := os.ReadFile(filepath.Join(root, "etc/sudoers"))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !strings.Contains(string(b), "includedir /etc/sudoers.d")) {
		return false, "the image's /etc/sudoers does not read /etc/sudoers.d: the agent cannot use sudo (add @includedir /etc/sudoers.d to the image's sudoers)"
	}
	if err != nil {
		return false, fmt.Sprintf("the image's /etc/sudoers cannot be read (%v): the agent cannot use sudo", err)
	}
	return true, ""
}

// toolEnv is the environment of Sandbar's own tools run as u: the base
// environment, the CA's variables and extra, with Sandbar's PATH. The
// image's and the start's variables stay out: nothing of the agent's
// (a GIT_DIR, an LD_PRELOAD) steers a save.
func (s *session) toolEnv(u User, trust, extra map[string]string) map[string]string {
	env := mergeEnv(baseEnv(u), trust, extra)
	if s.cfg.ToolRoot != "" {
		env["PATH"] = toolPath
	} else {
		env["PATH"] = basePath
	}
	return env
}

// clipNotes bounds agent:started's notes (protocol.MaxNotes,
// protocol.MaxNote).
func clipNotes(notes []string) []string {
	if len(notes) > protocol.MaxNotes {
		notes = notes[:protocol.MaxNotes]
	}
	out := make([]string, 0, len(notes))
	for _, n := range notes {
		out = append(out, clipText(n, protocol.MaxNote))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
