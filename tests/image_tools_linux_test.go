package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestImageTools: in a session of the default image the agent is a
// non-root user that may use sudo (NOPASSWD, inside its VM), builds C
// with gcc and make, and finds dpkg's database whole (apt-get check
// passes, sudo and build-essential are installed as dpkg sees it); with
// the project's sudo setting off, the next session's agent has no sudo.
func TestImageTools(t *testing.T) {
	w := newWorld(t)
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "2")
	w.waitState(id, "running")

	sh := func(script string) string {
		t.Helper()
		out, errOut, code := w.guestSh(id, script)
		if code != 0 {
			t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", script, code, out, errOut)
		}
		return out
	}
	if got := sh("id -un; id -u"); !strings.HasPrefix(got, "agent\n") || strings.HasSuffix(got, "\n0\n") {
		t.Errorf("the agent runs as %q, want the user agent, not root", got)
	}
	if os.Geteuid() == 0 {
		// A workspace owned by root leaves the agent uid 1000.
		if got := sh("id -u"); got != "1000\n" {
			t.Errorf("agent uid = %q, want 1000", got)
		}
	}
	if got := sh("sudo -n id -u"); got != "0\n" {
		t.Errorf("sudo -n id -u = %q, want 0", got)
	}
	if got := sh("stat -c '%a %U' /etc/sudoers /etc/sudoers.d/sandbar-agent /usr/bin/sudo"); got != "440 root\n440 root\n4755 root\n" {
		t.Errorf("sudo's files: %q", got)
	}
	sh("gcc --version && make --version && g++ --version")
	got := sh(`set -e; d=$(mktemp -d); cd $d
printf '#include <stdio.h>\nint main(void){puts("built in the guest");return 0;}\n' > hello.c
printf 'hello: hello.c\n\tcc -O2 -o $@ $<\n' > Makefile
make -s && ./hello`)
	if got != "built in the guest\n" {
		t.Errorf("a C program built with make and gcc printed %q", got)
	}
	// dpkg knows what the image holds, so apt can add to it.
	if got := sh("dpkg-query -W -f '${Status}\\n' sudo apt build-essential libc6 debian-archive-keyring"); got != strings.Repeat("install ok installed\n", 5) {
		t.Errorf("dpkg-query says:\n%s", got)
	}
	if out := sh("sudo apt-get check 2>&1"); strings.Contains(out, "E:") || strings.Contains(out, "W:") {
		t.Errorf("apt-get check:\n%s", out)
	}
	if out := sh("sudo dpkg --audit 2>&1"); out != "" {
		t.Errorf("dpkg --audit:\n%s", out)
	}
	sh("test -r /usr/share/keyrings/debian-archive-keyring.gpg && grep -q '^URIs: http://' /etc/apt/sources.list.d/debian.sources")

	// Off for the project: the next session's agent has no sudo.
	if out := w.ok("project", "sudo", w.repo, "off"); !strings.Contains(out, "may not") {
		t.Errorf("project sudo off printed %q", out)
	}
	w.ok("stop", id)
	id2 := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "2")
	w.waitState(id2, "running")
	if out, errOut, code := w.guestSh(id2, "sudo -n true"); code == 0 {
		t.Errorf("sudo works with the project's setting off: %q %q", out, errOut)
	}
	if out, _, code := w.guestSh(id2, "ls /etc/sudoers.d/"); code != 0 || strings.Contains(out, "sandbar-agent") {
		t.Errorf("/etc/sudoers.d holds %q with sudo off", out)
	}
	if out := w.ok("project", "sudo", w.repo); !strings.Contains(out, "may not") {
		t.Errorf("project sudo printed %q", out)
	}
}

// archiveHost is the Debian archive the image's apt sources name.
const archiveHost = "deb.debian.org"

// TestImageBuildsAGoProject: the agent builds and tests a Go project with
// a dependency, as a person's agent would in the default image: `sudo
// apt-get install golang-go` over plain HTTP from the Debian archive,
// then `go get` from the Go module proxy over HTTPS (this machine's
// trust carried into the VM) and `go build` and `go test`. The archive's
// and the proxy's addresses here are in a range Sandbar closes by
// default, so the person's own rules open exactly the addresses the names
// have on this host. One VM for both (CI time).
func TestImageBuildsAGoProject(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads from the Debian archive and the Go module proxy")
	}
	proxy, ok := goModuleProxy(t)
	if !ok {
		t.Skip("go env GOPROXY names no HTTPS module proxy")
	}
	var rules strings.Builder
	for _, r := range []struct {
		host string
		port int
	}{{archiveHost, 80}, {proxy.Hostname(), 443}} {
		if reachable(t, &rules, r.host, r.port) == 0 {
			t.Skipf("no route from this host to %s port %d", r.host, r.port)
		}
	}
	w := newWorld(t)
	if out, errOut, code := w.run(rules.String(), "net", "rules", "--set", "-"); code != 0 {
		t.Fatalf("net rules --set: %s %s", out, errOut)
	}
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "2")
	w.waitState(id, "running")
	// 81 MB of packages unpacked to 464 MB under emulation: minutes on
	// a loaded machine (170 s alone, over 5 min beside a benchmark).
	out, errOut, code := w.runWithin(12*time.Minute, "", "exec", id, "--", "sh", "-c", "sudo apt-get update -q && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go && go version")
	if code != 0 || !strings.Contains(out, "go version go1.") {
		t.Fatalf("apt-get install golang-go: exit %d\nstdout: %s\nstderr: %s", code, clip(out), clip(errOut))
	}
	if got, _, _ := w.guestSh(id, "dpkg-query -W -f '${Status}' golang-go"); got != "install ok installed" {
		t.Errorf("dpkg says golang-go is %q", got)
	}
	// A module with a dependency from the proxy, a program and its test.
	script := `set -e
mkdir -p /workspace/hello && cd /workspace/hello
printf 'module example.com/hello\n\ngo 1.19\n' > go.mod
cat > main.go <<'GO'
package main

import (
	"fmt"

	"golang.org/x/text/language"
)

func tag() string { return language.MustParse("fr-CA").Parent().String() }

func main() { fmt.Println(tag()) }
GO
cat > main_test.go <<'GO'
package main

import "testing"

func TestTag(t *testing.T) {
	if got := tag(); got != "fr" {
		t.Fatalf("tag() = %q", got)
	}
}
GO
export GOPROXY=` + proxy.String() + ` GOFLAGS=-mod=mod
go get golang.org/x/text@v0.14.0
go clean -modcache
go mod download -x 2>&1 | grep -c 'golang.org/x/text/@v/v0.14.0.zip' >&2
go build -o /tmp/hello . && /tmp/hello
go test ./...
`
	out, errOut, code = w.guestSh(id, script)
	if code != 0 || !strings.HasPrefix(out, "fr\n") || !strings.Contains(out, "ok  \texample.com/hello") {
		t.Fatalf("go get, build and test in the VM: exit %d\nstdout: %s\nstderr: %s", code, clip(out), clip(errOut))
	}
	if sum, _, _ := w.guestSh(id, "grep -c golang.org/x/text /workspace/hello/go.sum"); strings.TrimSpace(sum) == "0" || sum == "" {
		t.Errorf("go.sum has no golang.org/x/text lines: %q", sum)
	}
}

// reachable resolves host, writes an allow rule for each of its IPv4
// addresses on port to rules, and returns how many of them this host can
// connect to.
func reachable(t *testing.T, rules *strings.Builder, host string, port int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	if err != nil {
		t.Logf("%s does not resolve on this host: %v", host, err)
		return 0
	}
	n := 0
	for _, a := range addrs {
		fmt.Fprintf(rules, "allow %s:%d\n", a, port)
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(a.String(), fmt.Sprint(port)), 5*time.Second); err == nil {
			c.Close()
			n++
		}
	}
	return n
}
