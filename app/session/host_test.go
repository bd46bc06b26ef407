package session

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"sandbar/app/store"
)

func TestOwnerAliveFrom(t *testing.T) {
	self := store.Owner{PID: 100, Start: 5000, Host: "anns-mbp.local", Boot: "boot-b", PIDNS: "pid:[1]"}
	running := func(start int64) func(int) proc {
		return func(pid int) proc { return proc{exists: true, start: start} }
	}
	gone := func(int) proc { return proc{} }
	zombie := func(int) proc { return proc{exists: true, zombie: true, start: 77} }
	owner := func(f func(*store.Owner)) store.Owner {
		o := store.Owner{PID: 4242, Start: 77, Host: "anns-mbp.local", Boot: "boot-b", PIDNS: "pid:[1]"}
		f(&o)
		return o
	}
	same := func(*store.Owner) {}
	tests := []struct {
		name  string
		owner store.Owner
		probe func(int) proc
		want  bool
	}{
		{"running, started when recorded", owner(same), running(77), true},
		{"start time unknown here", owner(same), running(0), true},
		{"exited", owner(same), gone, false},
		{"pid reused by a later process", owner(same), running(78), false},
		{"zombie", owner(same), zombie, false},
		{"no pid", owner(func(o *store.Owner) { o.PID = 0 }), running(77), false},
		// A Mac's host name changes with the network: in the same boot the
		// pid is what counts.
		{"renamed host, process gone", owner(func(o *store.Owner) { o.Host = "Anns-MacBook-Pro.home" }), gone, false},
		{"renamed host, process running", owner(func(o *store.Owner) { o.Host = "Anns-MacBook-Pro.home" }), running(77), true},
		// Recorded before a restart: whatever has its pid now is not it.
		{"earlier boot, pid reused", owner(func(o *store.Owner) { o.Boot = "boot-a" }), running(77), false},
		{"earlier boot, renamed host", owner(func(o *store.Owner) { o.Boot, o.Host = "boot-a", "other" }), running(77), false},
		// Another container on this kernel: its pids are not ours to ask.
		{"another pid namespace", owner(func(o *store.Owner) { o.PIDNS = "pid:[2]" }), gone, true},
		// Records from before boot ids: the host name is all there is.
		{"old record, this host, gone", owner(func(o *store.Owner) { o.Boot, o.PIDNS = "", "" }), gone, false},
		{"old record, this host, running", owner(func(o *store.Owner) { o.Boot, o.PIDNS = "", "" }), running(77), true},
		{"old record, another host", owner(func(o *store.Owner) { o.Boot, o.PIDNS, o.Host = "", "", "build-box" }), gone, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownerAliveFrom(tc.owner, self, tc.probe); got != tc.want {
				t.Errorf("ownerAliveFrom(%+v) = %v, want %v", tc.owner, got, tc.want)
			}
		})
	}
}

func TestSameOwner(t *testing.T) {
	a := store.Owner{PID: 7, Start: 9, Host: "a.local", Boot: "b1", PIDNS: "pid:[1]"}
	renamed := a
	renamed.Host = "a.home"
	rebooted := a
	rebooted.Boot = "b2"
	reused := a
	reused.Start = 10
	old := store.Owner{PID: 7, Start: 9, Host: "a.local"}
	tests := []struct {
		name string
		x, y store.Owner
		want bool
	}{
		{"itself", a, a, true},
		{"host renamed meanwhile", a, renamed, true},
		{"another boot", a, rebooted, false},
		{"pid reused", a, reused, false},
		{"old record, same host", old, a, true},
		{"old record, another host", old, renamed, false},
	}
	for _, tc := range tests {
		if got := sameOwner(tc.x, tc.y); got != tc.want {
			t.Errorf("%s: sameOwner = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// On this machine: this process is a live owner with a boot id and a start
// time, and a child that exited (and was reaped) is not.
func TestOwnerAliveHere(t *testing.T) {
	self := selfOwner()
	if runtime.GOOS == "linux" && (self.Boot == "" || self.Start == 0) {
		t.Errorf("selfOwner() = %+v: want a boot id and a start time", self)
	}
	if !ownerAlive(self) {
		t.Errorf("this process (%+v) does not look alive", self)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := self
	child.PID, child.Start = cmd.Process.Pid, procStart(cmd.Process.Pid)
	if child.Start == 0 {
		t.Errorf("no start time for the child %d", child.PID)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if ownerAlive(child) {
		t.Errorf("the child %d exited and was reaped but looks alive", child.PID)
	}
}
