package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestAgentTree: the agent's tree read from its own children files is
// the one every process's stat gives, grandchildren included, and
// nothing outside it.
func TestAgentTree(t *testing.T) {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", os.Getpid(), os.Getpid())); err != nil {
		t.Skipf("this kernel has no children files: %v", err)
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & (sleep 30 & wait) & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	agent := cmd.Process.Pid
	// The whole tree: sh, sleep, a subshell and its sleep.
	subtree := func(procs map[int]procInfo, kids map[int][]int) []int {
		var out []int
		queue := []int{agent}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if _, ok := procs[pid]; ok {
				out = append(out, pid)
			}
			queue = append(queue, kids[pid]...)
		}
		slices.Sort(out)
		return out
	}
	var want []int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if want = subtree(allProcs("/proc")); len(want) == 4 {
			break
		}
	}
	if len(want) != 4 {
		t.Fatalf("the tree has %d processes, want 4: %v", len(want), want)
	}
	procs, desc := agentTree("/proc", agent)
	if got := slices.Sorted(slices.Values(append([]int{agent}, desc...))); !slices.Equal(got, want) {
		t.Errorf("agentTree = %v and its descendants %v, want %v", agent, desc, want)
	}
	if len(procs) != 4 {
		t.Errorf("agentTree read %d processes, want the tree's 4: %v", len(procs), procs)
	}
	for pid, p := range procs {
		if all := readProcs("/proc")[pid]; all != p {
			t.Errorf("process %d: %+v, want %+v", pid, p, all)
		}
	}
	if procs, _ := agentTree("/proc", 1<<30); procs != nil {
		t.Errorf("a gone agent has a tree: %v", procs)
	}
}

// TestAgentTreeWithoutChildrenFiles: a kernel without the children
// files has every process read, and the tree is still found.
func TestAgentTreeWithoutChildrenFiles(t *testing.T) {
	root := t.TempDir()
	proc := func(pid, ppid int, start uint64) {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(filepath.Join(dir, "task", fmt.Sprint(pid)), 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (a) name) S %d 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 %d 0\n", pid, ppid, start)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proc(10, 1, 100)
	proc(11, 10, 200)
	proc(12, 11, 300)
	proc(13, 1, 400)
	procs, desc := agentTree(root, 10)
	if !slices.Equal(desc, []int{11, 12}) {
		t.Errorf("descendants = %v, want 11, 12", desc)
	}
	if procs[12].start != 3 || procs[12].ppid != 11 {
		t.Errorf("process 12 = %+v, want ppid 11, start 3 s", procs[12])
	}
}
