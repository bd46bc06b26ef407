package supervisor

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sandbar/guest/protocol"
)

// statsLoop sends a stats event every interval until teardown.
func (s *session) statsLoop(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	prev, err := readCPU(s.cfg.ProcRoot)
	if err != nil {
		s.log.Warn("cannot read cpu times; cpu will read 0", "err", err)
	}
	for {
		select {
		case <-s.life.Done():
			return
		case <-t.C:
		}
		ev := protocol.Event{Ev: protocol.EvStats}
		if cur, err := readCPU(s.cfg.ProcRoot); err == nil {
			ev.CPU = cur.percentSince(prev)
			prev = cur
		}
		if used, total, err := readMem(s.cfg.ProcRoot); err == nil {
			ev.MemUsed, ev.MemTotal = used, total
		} else {
			s.log.Debug("read memory", "err", err)
		}
		ev.Disk = &protocol.Disks{}
		if used, total, err := s.cfg.Sys.DiskUsage(s.cfg.Workspace); err == nil {
			ev.Disk.Workspace = protocol.Usage{Used: used, Total: total}
		}
		if used, total, err := s.cfg.Sys.DiskUsage("/"); err == nil {
			ev.Disk.Scratch = protocol.Usage{Used: used, Total: total}
		}
		ev.Procs = countProcs(s.cfg.ProcRoot)
		if !s.emit(ev) {
			return
		}
	}
}

// cpuTimes is the first ("cpu") line of /proc/stat, in clock ticks.
type cpuTimes struct{ busy, total uint64 }

func readCPU(procRoot string) (cpuTimes, error) {
	f, err := os.Open(filepath.Join(procRoot, "stat"))
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		var t cpuTimes
		// user nice system idle iowait irq softirq steal; guest time is
		// already inside user.
		for i, f := range fields[1:min(len(fields), 9)] {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("parse %s/stat: %w", procRoot, err)
			}
			t.total += v
			if i != 3 && i != 4 { // idle, iowait
				t.busy += v
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("no cpu line in %s/stat", procRoot)
}

// percentSince is the busy share of all CPUs since prev, 0–100.
func (t cpuTimes) percentSince(prev cpuTimes) float64 {
	if t.total <= prev.total || t.busy < prev.busy {
		return 0
	}
	p := float64(t.busy-prev.busy) / float64(t.total-prev.total) * 100
	return min(max(p, 0), 100)
}

// readMem returns MemTotal-MemAvailable and MemTotal, in bytes.
func readMem(procRoot string) (used, total uint64, err error) {
	data, err := os.ReadFile(filepath.Join(procRoot, "meminfo"))
	if err != nil {
		return 0, 0, err
	}
	var avail uint64
	var haveTotal, haveAvail bool
	for line := range bytes.Lines(data) {
		fields := strings.Fields(string(line))
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			total, haveTotal = v*1024, true
		case "MemAvailable:":
			avail, haveAvail = v*1024, true
		}
	}
	if !haveTotal || !haveAvail {
		return 0, 0, fmt.Errorf("%s/meminfo lacks MemTotal or MemAvailable", procRoot)
	}
	if avail > total {
		avail = total
	}
	return total - avail, total, nil
}

// countProcs counts the numeric entries of /proc.
func countProcs(procRoot string) int {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			n++
		}
	}
	return n
}
