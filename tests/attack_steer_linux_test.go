//go:build linux

package tests

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// steerScript commits, from inside the guest as the agent, what steers a
// host git that has git-lfs installed: .gitattributes sending *.bin
// through LFS and every other file through filter x, a .lfsconfig whose
// LFS endpoint is the agent's (on the host's loopback, %d is its port), an
// LFS pointer, and other steering files (.envrc, .vscode/settings.json).
const steerScript = `set -u
printf '* filter=x\n*.bin filter=lfs diff=lfs merge=lfs -text\n' > .gitattributes
printf '[lfs]\n\turl = http://127.0.0.1:%d/agent-chosen-endpoint\n' > .lfsconfig
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n' > big.bin
printf 'touch %%s/%senvrc\n' "$M" > .envrc
mkdir -p .vscode && printf '{"git.path": "/tmp/evil"}\n' > .vscode/settings.json
printf 'plain\n' > notes.txt
git add -A && git commit -qm "steer the host" || { echo "hostile: could not plant: commit"; exit 1; }
echo "hostile: committed"
`

// TestHostileSteering (issue 21, finding 1): the person has git-lfs in
// their global git config as `git lfs install` leaves it, plus a filter x
// and core.hooksPath, each of which would leave a marker if run. The
// agent commits steering files naming them, with an LFS endpoint of its
// own on the host's loopback (a server that counts what reaches it).
// `merge --into` is refused without --accept-steering, naming the files
// and the flag, and the repository stays byte-identical; `changes` names
// them too. With the flag it merges: the pointer is written as stored,
// nothing reached the endpoint and no filter or hook ran.
func TestHostileSteering(t *testing.T) {
	if _, err := exec.LookPath("git-lfs"); err != nil {
		t.Skip("git-lfs is not installed (scripts/install-deps.sh installs it)")
	}
	h := newHostileWorld(t)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		t.Logf("the agent's LFS endpoint got %s %s", r.Method, r.URL.Path)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	h.commitScript(fmt.Sprintf(steerScript, srv.Listener.Addr().(*net.TCPAddr).Port, markerPrefix))

	// The person's global git config, from here on.
	var cfg string
	for _, kv := range h.env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_GLOBAL="); ok {
			cfg = v
		}
	}
	lfs := exec.Command("git", "lfs", "install", "--skip-repo")
	lfs.Env = h.env
	if out, err := lfs.CombinedOutput(); err != nil {
		t.Fatalf("git lfs install: %v\n%s", err, out)
	}
	hooks := filepath.Join(filepath.Dir(h.markers), "hooks")
	os.MkdirAll(hooks, 0o755)
	for _, name := range []string{"post-checkout", "post-merge", "reference-transaction", "post-index-change"} {
		os.WriteFile(filepath.Join(hooks, name), []byte("#!/bin/sh\ntouch "+h.markers+"/"+markerPrefix+"hook-"+name+"\n"), 0o755)
	}
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "[filter \"x\"]\n\tclean = touch %[1]s/%[2]sfilter-x-clean && cat\n\tsmudge = touch %[1]s/%[2]sfilter-x-smudge && cat\n\trequired = true\n[core]\n\thooksPath = %[3]s\n", h.markers, markerPrefix, hooks)
	f.Close()
	if c, _ := os.ReadFile(cfg); !strings.Contains(string(c), "git-lfs filter-process") {
		t.Fatalf("git lfs install left no filter in %s:\n%s", cfg, c)
	}

	start := h.stepWithin(4*time.Minute, "start --wait (the agent commits its steering files)",
		"start", "--repo", h.repo, "--agent", "sh hostile.sh", "--cpus", "1", "--memory", "768", "--disk", "1", "--no-network", "--wait")
	if start.hung || start.code != 0 || !strings.Contains(start.out, "hostile: committed") {
		t.Fatalf("the agent did not commit: exit %d\n%s\n%s", start.code, clip(start.out), clip(start.errOut))
	}
	ss := h.ls()
	if len(ss) != 1 {
		t.Fatalf("ls: %+v", ss)
	}
	id := ss[0].ID

	ch := h.step("changes", "changes", id)
	for _, want := range []string{"steer tools on your machine", ".gitattributes", ".lfsconfig", ".envrc", ".vscode/settings.json", "sandbar diff " + id + " FILE"} {
		if !strings.Contains(ch.out, want) {
			t.Errorf("changes does not say %q:\n%s", want, clip(ch.out))
		}
	}
	if js := h.step("changes --json", "changes", "--json", id); !strings.Contains(js.out, `"Steering"`) || !strings.Contains(js.out, `"path": ".lfsconfig"`) {
		t.Errorf("changes --json has no steering files:\n%s", clip(js.out))
	}
	if d := h.step("diff .lfsconfig", "diff", id, ".lfsconfig"); d.code != 0 || !strings.Contains(d.out, "agent-chosen-endpoint") {
		t.Errorf("diff %s .lfsconfig: exit %d\n%s%s", id, d.code, clip(d.out), clip(d.errOut))
	}

	before := hashTree(t, h.repo)
	refused := h.step("merge --into without --accept-steering", "merge", "--into", id)
	if refused.code == 0 {
		t.Errorf("merge --into merged steering files without --accept-steering:\n%s", refused.out)
	}
	for _, want := range []string{".gitattributes", ".lfsconfig", ".envrc", ".vscode/settings.json", "--accept-steering", "nothing was merged"} {
		if !strings.Contains(refused.errOut, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, refused.errOut)
		}
	}
	if diffs := compareTrees(before, hashTree(t, h.repo), nil); len(diffs) > 0 {
		t.Errorf("the refused merge changed the repository:\n%s", strings.Join(diffs, "\n"))
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the refused merge contacted the agent's LFS endpoint %d times", n)
	}

	merged := h.step("merge --into --accept-steering", "merge", "--into", "--accept-steering", id)
	if merged.code != 0 {
		t.Errorf("merge --into --accept-steering: exit %d\n%s%s", merged.code, merged.out, merged.errOut)
	}
	for _, want := range []string{"the working tree is updated", "steer tools on your machine in this merge", ".lfsconfig"} {
		if !strings.Contains(merged.out, want) {
			t.Errorf("merge's output does not say %q:\n%s", want, merged.out)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("merge --into contacted the agent's LFS endpoint %d times", n)
	}
	if b, _ := os.ReadFile(filepath.Join(h.repo, "big.bin")); !strings.HasPrefix(string(b), "version https://git-lfs.github.com/spec/v1\n") {
		t.Errorf("big.bin = %q, want the LFS pointer as stored", b)
	}
	if _, err := os.Stat(filepath.Join(h.repo, ".git", "lfs")); err == nil {
		t.Errorf("git-lfs ran in the repository (it made .git/lfs)")
	}
	h.checkMarkers("after the merges")
	for _, p := range markersUnder(h.home, h.repo) {
		t.Errorf("a marker file appeared at %s", p)
	}
	h.mustStep("rm --force", "rm", "--force", id)
}
