package engine

// Tests of samePerson with a second user for real: the engine refusing a
// caller of another user's, and a client refusing an engine of another
// user's. Making a process of another user takes root, so they skip
// without it; the other user's process is this test binary, run as
// nobody (TestHelperProcessPeer). Linux only: it is what runs as root,
// here and in CI.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/config"
)

// nobody is the other user: uid and gid 65534.
const nobody = 65534

// The helper process's orders, in its environment: what to do ("call" or
// "listen"), at which socket, and the repository a call adds.
const (
	peerHelperEnv = "SANDBAR_TEST_PEER_HELPER"
	peerSocketEnv = "SANDBAR_TEST_PEER_SOCKET"
	peerRepoEnv   = "SANDBAR_TEST_PEER_REPO"
)

// TestPeerEngineRefusesAnotherUsersCaller: a caller running as another
// user that reaches the engine's connection handler gets nothing served,
// not even the hello, and the engine logs why; the same exchange from
// this user's process is served.
func TestPeerEngineRefusesAnotherUsersCaller(t *testing.T) {
	needRoot(t)
	f := newFixture(t)
	logs := &notifyBuffer{}
	srv, err := Listen(context.Background(), f.env.Paths, f.env.Manager, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	// The engine's own socket is in a directory that is the person's
	// alone, where user nobody's connect would fail before the engine
	// sees it; this one, which the test makes, nobody may reach.
	shared := sharedDir(t)
	sock := filepath.Join(shared, "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.serveOn(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	cmd := helperAsNobody(t, shared, "call", sock, f.repo)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start(t, cmd)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the caller running as user %d: %v\n%s", nobody, err, stderr.String())
	}
	var theirs peerCallResult
	if err := json.Unmarshal(firstLine(stdout.Bytes()), &theirs); err != nil {
		t.Fatalf("the caller running as user %d reported %q: %v", nobody, stdout.String(), err)
	}
	if len(theirs.Frames) > 0 || !theirs.HungUp {
		t.Errorf("the engine answered a caller running as user %d: %s", nobody, theirs)
	}
	if ps, err := f.env.Manager.Projects(context.Background()); err != nil || len(ps) != 0 {
		t.Errorf("after the call of user %d the engine has projects %+v (%v), want none", nobody, ps, err)
	}
	if l := logs.String(); !strings.Contains(l, "refused an engine client") || !strings.Contains(l, fmt.Sprintf("runs as user %d", nobody)) {
		t.Errorf("the engine did not log that it refused user %d; its log:\n%s", nobody, l)
	}

	// The same exchange from this process is served: the refusal above
	// is the engine's check on the caller, not a broken socket.
	ours, err := peerCall(sock, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(ours.Frames) < 2 || ours.Frames[0].Hello == nil || ours.Frames[0].Hello.PID != os.Getpid() {
		t.Fatalf("the engine did not answer this user's hello: %s", ours)
	}
	if last := ours.Frames[len(ours.Frames)-1]; !last.Done || last.Error != "" {
		t.Fatalf("the engine did not serve this user's call: %s", ours)
	}
	if ps, err := f.env.Manager.Projects(context.Background()); err != nil || len(ps) != 1 || ps[0].Path != f.repo {
		t.Errorf("after this user's call the engine has projects %+v (%v), want %s", ps, err, f.repo)
	}
}

// TestPeerClientRefusesAnotherUsersEngine: a client finding at its
// engine's socket path a listener of another user's (squatted there)
// refuses it, naming that user, though it answers the hello as an
// engine would.
func TestPeerClientRefusesAnotherUsersEngine(t *testing.T) {
	needRoot(t)
	// A data directory is the person's alone (Paths.Ensure sees to it).
	paths := config.Paths{Home: t.TempDir()}
	if err := os.Chmod(paths.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := paths.EngineSocket()
	if filepath.Dir(sock) != paths.Home {
		t.Fatalf("the engine's socket %s is not in the data directory %s: its path is too long", sock, paths.Home)
	}

	// Nobody listens where it may, and root moves that socket to the
	// engine's path: the socket directory's own check (CheckSocketDir)
	// passes, and only the check on the engine's user is left to refuse.
	shared := sharedDir(t)
	theirs := filepath.Join(shared, "engine.sock")
	cmd := helperAsNobody(t, shared, "listen", theirs, "")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &notifyBuffer{}
	cmd.Stderr = stderr
	start(t, cmd)
	ready, drained := make(chan error, 1), make(chan struct{})
	t.Cleanup(func() {
		stdin.Close() // which ends it
		<-drained
		if err := cmd.Wait(); err != nil {
			t.Errorf("the engine running as user %d: %v\n%s", nobody, err, stderr.String())
		}
	})
	go func() {
		defer close(drained)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("it said %q", line)
		}
		ready <- err
		io.Copy(io.Discard, stdout)
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("the engine running as user %d did not listen: %v\n%s", nobody, err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the engine running as user %d did not listen within 30 s\n%s", nobody, stderr.String())
	}
	if err := os.Rename(theirs, sock); err != nil {
		t.Fatal(err)
	}

	// What is at the path answers a hello, as the process of user nobody.
	hello, err := peerHello(sock)
	if err != nil || hello.PID != cmd.Process.Pid {
		t.Fatalf("the engine running as user %d (process %d) did not answer at %s: %+v, %v", nobody, cmd.Process.Pid, sock, hello, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Dial(ctx, paths)
	if err == nil {
		t.Fatalf("Dial took the engine of user %d (process %d) at %s", nobody, r.PID(), sock)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("runs as user %d", nobody)) {
		t.Errorf("Dial's error does not name user %d: %v", nobody, err)
	}
}

// TestHelperProcessPeer is the other user's process of the tests above,
// when this binary is run by helperAsNobody; otherwise it does nothing.
func TestHelperProcessPeer(t *testing.T) {
	sock := os.Getenv(peerSocketEnv)
	switch os.Getenv(peerHelperEnv) {
	case "":
		return // not run by helperAsNobody
	case "call":
		// Call the engine as a client would, and say what it answered.
		res, err := peerCall(sock, os.Getenv(peerRepoEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		json.NewEncoder(os.Stdout).Encode(res)
		os.Exit(0)
	case "listen":
		// Be an engine that answers the hello, until stdin closes.
		ln, err := net.Listen("unix", sock)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println("ready")
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go answerHello(c)
			}
		}()
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "%s=%q: want call or listen\n", peerHelperEnv, os.Getenv(peerHelperEnv))
	os.Exit(2)
}

// answerHello answers a client's hello as an engine of this API would.
func answerHello(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		return
	}
	json.NewEncoder(c).Encode(frame{Hello: &Hello{API: APIVersion, PID: os.Getpid()}})
	io.Copy(io.Discard, c)
}

// peerCallResult is what the engine answered a call: its frames, and
// whether it hung up before the final one (else Err says what ended the
// reading, if anything).
type peerCallResult struct {
	Frames []frame `json:"frames"`
	HungUp bool    `json:"hung_up"`
	Err    string  `json:"err,omitempty"`
}

func (r peerCallResult) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// peerCall connects to the engine at sock and sends what a client sends
// at once: the hello and the call, here to add the project at repo. An
// error is a connect that failed: the engine refuses only once connected.
func peerCall(sock, repo string) (peerCallResult, error) {
	var res peerCallResult
	c, err := net.DialTimeout("unix", sock, 10*time.Second)
	if err != nil {
		return res, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	req, err := json.Marshal(AddProjectRequest{Path: repo})
	if err != nil {
		return res, err
	}
	enc := json.NewEncoder(c)
	err = enc.Encode(Hello{Op: OpHello, API: APIVersion})
	if err == nil {
		err = enc.Encode(callLine{Op: OpAddProject, Req: req})
	}
	// A write fails with EPIPE when the engine has hung up already;
	// what it sent before that is still there to read.
	if err != nil && !errors.Is(err, syscall.EPIPE) {
		res.Err = err.Error()
		return res, nil
	}
	dec := json.NewDecoder(c)
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			res.HungUp = errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
			if !res.HungUp {
				res.Err = err.Error()
			}
			return res, nil
		}
		res.Frames = append(res.Frames, f)
		if f.Done {
			return res, nil
		}
	}
}

// peerHello is the hello of what listens at sock, unchecked.
func peerHello(sock string) (Hello, error) {
	c, err := net.DialTimeout("unix", sock, 10*time.Second)
	if err != nil {
		return Hello{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := json.NewEncoder(c).Encode(Hello{Op: OpHello, API: APIVersion}); err != nil {
		return Hello{}, err
	}
	var f frame
	if err := json.NewDecoder(c).Decode(&f); err != nil {
		return Hello{}, err
	}
	if f.Hello == nil {
		return Hello{}, fmt.Errorf("no hello: %+v", f)
	}
	return *f.Hello, nil
}

// needRoot skips a test that runs a process as another user unless this
// process may.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skipf("runs a process as user %d to be the other user, which takes root (this is user %d)", nobody, os.Getuid())
	}
}

// sharedDir is a directory of the test's that nobody may write, under
// directories nobody may pass through.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir's parent is the test's own, 0700: open it to pass
	// through, and dir to all.
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(filepath.Dir(dir)); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("user %d cannot pass through %s (mode %o), above the test's temporary directory: set TMPDIR to one it can", nobody, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// helperAsNobody is this test binary, copied into dir for nobody to run,
// set to run TestHelperProcessPeer as nobody with the orders given: what
// to do, at which socket, adding which repository.
func helperAsNobody(t *testing.T, dir, what, sock, repo string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "engine.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "-test.run=^TestHelperProcessPeer$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), peerHelperEnv+"="+what, peerSocketEnv+"="+sock, peerRepoEnv+"="+repo)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody},
		Pdeathsig:  syscall.SIGKILL,
	}
	return cmd
}

// start starts cmd, skipping the test when this system does not let root
// become another user (a user namespace without that uid, a container
// without CAP_SETUID).
func start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
			t.Skipf("cannot run a process as user %d here: %v", nobody, err)
		}
		t.Fatal(err)
	}
}

func copyFile(from, to string, mode os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func firstLine(b []byte) []byte {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return line
}
