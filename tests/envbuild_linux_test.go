package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDevcontainerDockerfile: a trusted devcontainer.json whose image is
// built from a Dockerfile (build.dockerfile, context, args) is built in a
// VM, never on the host: the FROM image, named through a build argument,
// is pulled on the host from a real docker-registry on loopback; the RUN
// step writes a marker, the kernel and the host name it ran under and a
// uniquely named file under /tmp; the session runs on the built image and
// finds them, the kernel the guest's, the file nowhere on the host. A
// Dockerfile whose RUN fails fails its session with the step and the exit
// code; the session on the image built before keeps running, and a new
// one on the first commit's tree (a revert) starts on it without building
// again.
func TestDevcontainerDockerfile(t *testing.T) {
	_, ref := serveImage(t, "env/slim:1", slimDebianImage(t))

	w := newWorld(t)
	unique := fmt.Sprintf("sandbar-build-%d-%d", os.Getpid(), time.Now().UnixNano())
	hostFile := filepath.Join("/tmp", unique)
	t.Cleanup(func() { os.Remove(hostFile) })
	dc := filepath.Join(w.repo, ".devcontainer")
	os.MkdirAll(dc, 0o755)
	os.WriteFile(filepath.Join(dc, "devcontainer.json"), []byte(fmt.Sprintf(`{
		// The context is the repository's root, one folder up.
		"build": {"dockerfile": "Dockerfile", "context": "..", "args": {"BASE": %q, "NOTE": "from-args"}},
		"postCreateCommand": "cat /etc/build-marker > created.txt",
	}`, ref)), 0o644)
	dockerfile := `ARG BASE=none
FROM ${BASE} AS base
ARG NOTE=unset
COPY README.md /etc/from-context
RUN echo "built: $NOTE" > /etc/build-marker \
 && read k < /proc/sys/kernel/osrelease && echo "$k" > /etc/build-kernel \
 && read h < /proc/sys/kernel/hostname && echo "$h" > /etc/build-host \
 && : > /tmp/` + unique + ` && ls /tmp/` + unique + ` > /etc/build-tmp
`
	os.WriteFile(filepath.Join(dc, "Dockerfile"), []byte(dockerfile), 0o644)
	// What postCreateCommand leaves is an ignored file: the prepared
	// environment, made on the built image, keeps it.
	os.WriteFile(filepath.Join(w.repo, ".gitignore"), []byte("created.txt\n"), 0o644)
	w.git("add", ".")
	w.git("commit", "-qm", "environment from a Dockerfile")
	good := w.git("rev-parse", "HEAD")
	w.ok("project", "add", w.repo)
	w.ok("project", "trust", "--yes", w.repo)
	if out := w.ok("env", w.repo); !strings.Contains(out, "build: .devcontainer/Dockerfile, context .: built in a VM") {
		t.Errorf("sandbar env does not name the Dockerfile:\n%s", out)
	}

	start := time.Now()
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	log := w.waitLogWithin(id, "agent started", 15*time.Minute)
	t.Logf("built and started in %s", time.Since(start).Round(time.Second))
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "environment: image built from") || strings.Contains(l, "VM ready in") {
			t.Log(strings.TrimSpace(l))
		}
	}
	for _, want := range []string{
		": FROM " + ref + " AS base", // the name as the person wrote it, not the builder's
		"build: STEP 1/",
		"environment: image built from .devcontainer/Dockerfile",
		"built in a VM",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %q:\n%s", want, clip(log))
		}
	}
	sh := func(id, script string) string {
		t.Helper()
		out, errOut, code := w.guestSh(id, script)
		if code != 0 {
			_, log, _ := w.run("", "logs", id)
			t.Fatalf("%s: exit %d: %s %s\nlog:\n%s", script, code, out, errOut, clip(log))
		}
		return out
	}
	if got := sh(id, "cat created.txt /etc/from-context /etc/build-tmp"); got != "built: from-args\n# test\n/tmp/"+unique+"\n" {
		t.Errorf("the built image's files (the args, the context, the RUN step's /tmp): %q", got)
	}
	// The RUN step ran in the guest: its kernel is the session's VM's,
	// not this machine's, and nothing it wrote is on this machine.
	var u syscall.Utsname
	syscall.Uname(&u)
	hostKernel := utsString(u.Release[:])
	built := strings.TrimSpace(sh(id, "cat /etc/build-kernel"))
	if guest := strings.TrimSpace(sh(id, "uname -r")); built != guest || built == hostKernel {
		t.Errorf("the RUN step ran on kernel %q; the guest's is %q, this machine's %q", built, guest, hostKernel)
	}
	if hn, _ := os.Hostname(); strings.TrimSpace(sh(id, "cat /etc/build-host")) == hn {
		t.Errorf("the RUN step ran under this machine's host name %q", hn)
	}
	if _, err := os.Lstat(hostFile); err == nil {
		t.Fatalf("%s exists on the host: the build ran here", hostFile)
	}

	// A RUN that fails: the session fails with the step and exit code.
	os.WriteFile(filepath.Join(dc, "Dockerfile"), []byte(dockerfile+"RUN echo about to fail && exit 7\n"), 0o644)
	w.git("commit", "-qam", "a failing step")
	w.ok("project", "trust", "--yes", w.repo) // the file changed: trusted anew
	bad := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	// (Its state is running from the start; the build is part of it.)
	var s lsEntry
	var badLog string
	if !waitUntil(15*time.Minute, time.Second, func() bool {
		s = w.session(bad)
		_, badLog, _ = w.run("", "logs", bad)
		return s.State == "failed" || strings.Contains(badLog, "agent started")
	}) || s.State != "failed" {
		t.Fatalf("the session with a failing RUN is %s (%s), want failed; its log:\n%s", s.State, s.Reason, clip(badLog))
	}
	for _, want := range []string{"failed to build at STEP ", ": RUN echo about to fail && exit 7 (exit code 7)", "about to fail"} {
		if !strings.Contains(badLog+s.Reason, want) {
			t.Errorf("the failed build does not say %q:\n%s\nreason: %s", want, clip(badLog), s.Reason)
		}
	}
	// The image built before still serves: its session runs on, and a
	// new session on the first commit's tree starts on it, not building
	// again.
	if got := sh(id, "cat /etc/build-marker"); got != "built: from-args\n" {
		t.Errorf("the first session's image after the failed build: %q", got)
	}
	// The step taken back: the same tree as the first commit's.
	w.git("revert", "--no-edit", "HEAD")
	if tree, want := w.git("rev-parse", "HEAD^{tree}"), w.git("rev-parse", good+"^{tree}"); tree != want {
		t.Fatalf("the revert's tree %s is not the first commit's %s", tree, want)
	}
	w.ok("project", "trust", "--yes", w.repo)
	id3 := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	start = time.Now()
	log3 := w.waitLogWithin(id3, "agent started", 5*time.Minute)
	t.Logf("the session on the image built before started in %s", time.Since(start).Round(time.Second))
	if !strings.Contains(log3, "as built before") || strings.Contains(log3, "booting the build VM") {
		t.Errorf("the session at the first commit did not reuse the built image:\n%s", clip(log3))
	}
	if got := sh(id3, "cat /etc/build-marker"); got != "built: from-args\n" {
		t.Errorf("the reused image: %q", got)
	}
}

// waitLogWithin waits until the session's log contains want, or the
// session ended, and returns the log.
func (w *world) waitLogWithin(id, want string, d time.Duration) string {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, log, _ := w.run("", "logs", id)
		if strings.Contains(log, want) {
			return log
		}
		if s := w.session(id); s.State == "failed" || s.State == "stopped" || time.Now().After(deadline) {
			w.t.Fatalf("session %s (%s: %s): no %q in its log:\n%s", id, s.State, s.Reason, want, clip(log))
		}
		time.Sleep(time.Second)
	}
}

func utsString(b []int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
