//go:build linux

package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/store"
)

// smallHome puts w's data directory on a tmpfs of size (mount's syntax,
// "400m"), so a test can fill the disk holding Sandbar's data for real,
// and sets its disk floor (store.SettingDiskFloorMiB) to floorMiB.
// Mounting needs root (CI is root); elsewhere the test skips.
func smallHome(t *testing.T, w *world, size, floorMiB string) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "small disk")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "sandbar-test", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount a small tmpfs (needs root; CI is root): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		w.stopEngine() // its VMs die with it; then nothing holds the mount
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	w.home = filepath.Join(mnt, "home")
	w.env = append(w.env, "SANDBAR_HOME="+w.home) // the last one counts
	st, err := store.Open(filepath.Join(w.home, "sandbar.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetSetting(context.Background(), store.SettingDiskFloorMiB, floorMiB); err != nil {
		t.Fatal(err)
	}
	return mnt
}

func freeMiB(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize >> 20
}

// fillTo writes a ballast file that leaves about leaveMiB free in dir.
func fillTo(t *testing.T, dir string, leaveMiB int64) string {
	t.Helper()
	path := filepath.Join(dir, "ballast")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n := freeMiB(t, dir) - leaveMiB; n > 0; n-- {
		if _, err := f.Write(buf); err != nil {
			t.Fatalf("ballast: %v", err)
		}
	}
	return path
}

// TestDiskFullPausesAndResumes: Sandbar's data directory on a 400 MB
// tmpfs (it was a 400 MB file system in the report where a full disk
// went unseen). The agent's saved work comes first; then it writes
// 160 MiB where about 100 MiB are free. QEMU pauses the VM, and the
// session says "paused: the disk holding Sandbar's data is full (N MB
// free)"; exec fails at once with those words, a start is refused under
// the floor, and `sandbar resume` asks for room first. Freeing space resumes the VM by itself: the write
// completes whole, later work lands, stop saves it all, and merge brings
// home the work saved before the pause and after it.
func TestDiskFullPausesAndResumes(t *testing.T) {
	w := newWorld(t)
	mnt := smallHome(t, w, "400m", "48")
	w.ok("project", "add", w.repo)
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "768", "--disk", "2", "--no-network")
	w.waitState(id, "running")
	if out, errOut, code := w.guestSh(id, "echo early > early.txt && git add early.txt && git commit -qm early"); code != 0 {
		t.Fatalf("early work: exit %d\n%s%s", code, out, errOut)
	}
	w.ok("export", id) // saves the running session first

	ballast := fillTo(t, mnt, 100)
	type result struct {
		out  string
		code int
	}
	wrote := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, w.bin, "exec", id, "--", "sh", "-c", "dd if=/dev/zero of=/var/tmp/big bs=1M count=160 conv=fsync 2>&1 && stat -c %s /var/tmp/big")
		cmd.Env, cmd.Dir = w.env, w.repo
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
			out = append(out, err.Error()...)
		}
		wrote <- result{string(out), code}
	}()

	var s lsEntry
	if !waitUntil(3*time.Minute, 100*time.Millisecond, func() bool {
		s = w.session(id)
		return s.Activity == "paused"
	}) {
		t.Fatalf("the disk is full (%d MiB free) and the session still says %s (%s) %s\nlog:\n%s", freeMiB(t, mnt), s.State, s.Activity, s.Reason, lastLines(w.ok("logs", id), 20))
	}
	if s.State != "running" || !strings.HasPrefix(s.Reason, "paused: the disk holding Sandbar's data is full (") || !strings.HasSuffix(s.Reason, " MB free)") {
		t.Errorf("paused session: %s (%s): %q", s.State, s.Activity, s.Reason)
	}
	if table := w.ok("ls"); !strings.Contains(table, "paused") || !strings.Contains(table, "disk holding Sandbar's data is full") {
		t.Errorf("ls does not say the session paused on a full disk:\n%s", table)
	}
	_, errOut, code := w.run("", "exec", id, "--", "true")
	if code == 0 || !strings.Contains(errOut, "is full") || !strings.Contains(errOut, "sandbar resume") {
		t.Errorf("exec in a paused session: exit %d: %s", code, errOut)
	}
	_, errOut, code = w.run("", "start", "--repo", w.repo, "--agent", "true", "--no-network")
	if code == 0 || !strings.Contains(errOut, "disk full") || !strings.Contains(errOut, "48 MiB") {
		t.Errorf("a start on a full disk: exit %d: %s", code, errOut)
	}
	select {
	case r := <-wrote:
		t.Fatalf("the guest's write ended while its VM was paused: exit %d: %s", r.code, r.out)
	default:
	}
	// Resume (the window's button, the verb) wants room for the
	// database's next words first: on a disk this full it says so.
	if _, errOut, code := w.run("", "resume", id); code == 0 || !strings.Contains(errOut, "still full") || !strings.Contains(errOut, "free at least") {
		t.Errorf("resume on a full disk: exit %d: %s", code, errOut)
	}
	if _, errOut, code := w.run("", "resume", "nosuchsession"); code == 0 || !strings.Contains(errOut, "no session") {
		t.Errorf("resume of no session: exit %d: %s", code, errOut)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(3*time.Minute, 100*time.Millisecond, func() bool {
		s = w.session(id)
		return s.Activity != "paused"
	}) {
		t.Fatalf("%d MiB are free and the session still says %s (%s) %s", freeMiB(t, mnt), s.State, s.Activity, s.Reason)
	}
	if s.State != "running" || s.Activity != "working" {
		t.Errorf("after resuming: %s (%s) %q, want running (working) as before", s.State, s.Activity, s.Reason)
	}
	r := <-wrote
	if r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.out), "\n167772160") {
		t.Fatalf("the guest's write across the pause: exit %d: %s", r.code, r.out)
	}
	if out, errOut, code := w.guestSh(id, "rm /var/tmp/big && echo after > after.txt && git add after.txt && git commit -qm after"); code != 0 {
		t.Fatalf("work after resuming: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := w.run("", "stop", id); code != 0 {
		t.Fatalf("stop: exit %d\n%s%s", code, out, errOut)
	}
	w.ok("merge", id)
	for _, f := range []string{"early.txt", "after.txt"} {
		w.git("cat-file", "-e", "sandbar/"+id+":"+f)
	}
	out, errOut, _ := w.run("", "logs", id) // Sandbar's own lines go to stderr
	if logs := out + errOut; !strings.Contains(logs, "paused: the disk holding Sandbar's data is full") || !strings.Contains(logs, "resumed the VM") {
		t.Errorf("the log does not say the VM paused and resumed:\n%s", lastLines(logs, 20))
	}
}
