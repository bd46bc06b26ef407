package session

import (
	"os"

	"sandbar/app/store"
	"sandbar/vm/hostproc"
)

// selfOwner is this process as a VM owner.
func selfOwner() store.Owner {
	host, _ := os.Hostname()
	return store.Owner{PID: os.Getpid(), Start: procStart(os.Getpid()), Host: host, Boot: hostproc.BootID(), PIDNS: hostproc.PIDNamespace()}
}

// procStart is a process's start time as hostproc gives it (clock ticks
// since boot on Linux, microseconds since the epoch on macOS), or 0 where
// unknown.
func procStart(pid int) int64 {
	p, err := hostproc.Lookup(pid)
	if err != nil {
		return 0
	}
	return p.Start
}

// sameOwner reports whether two owners are the same process. The host
// name counts only for records without a boot id (older ones): a Mac's
// changes with the network while the process runs.
func sameOwner(a, b store.Owner) bool {
	if a.PID != b.PID || a.Start != b.Start {
		return false
	}
	if a.Boot != "" && b.Boot != "" {
		return a.Boot == b.Boot && a.PIDNS == b.PIDNS
	}
	return a.Host == b.Host
}

// ownerAlive reports whether the owner process still runs.
func ownerAlive(o store.Owner) bool { return ownerAliveFrom(o, selfOwner(), probe) }

// proc is what this machine says of a pid.
type proc struct {
	exists, zombie bool
	start          int64 // as store.Owner.Start; 0 where unknown
}

// probe asks the system about pid. A process the system will not tell
// about (an error other than "no such process") counts as existing, its
// start unknown.
func probe(pid int) proc {
	p, err := hostproc.Lookup(pid)
	switch {
	case hostproc.IsNoProcess(err):
		return proc{}
	case err != nil:
		return proc{exists: true}
	}
	return proc{exists: true, start: p.Start, zombie: p.Zombie}
}

// ownerAliveFrom is ownerAlive seen from self (this process as an owner),
// probe telling of this machine's pids. An owner recorded in another boot
// is gone: the machine restarted since, for no other machine can share
// the database (SQLite's WAL keeps it to the processes of one machine).
// In this boot and pid namespace the pid must name a live process that
// started when the owner did (pids are reused). An owner in another pid
// namespace (a container), or an older record without a boot id from
// another host name, cannot be asked about from here and counts as
// running.
func ownerAliveFrom(o, self store.Owner, probe func(pid int) proc) bool {
	if o.PID <= 0 {
		return false
	}
	if o.Boot != "" && self.Boot != "" {
		if o.Boot != self.Boot {
			return false
		}
		if o.PIDNS != self.PIDNS {
			return true
		}
	} else if o.Host != "" && o.Host != self.Host {
		return true
	}
	p := probe(o.PID)
	switch {
	case !p.exists:
		return false
	case o.Start != 0 && p.start != 0 && p.start != o.Start:
		return false
	}
	return !p.zombie
}
