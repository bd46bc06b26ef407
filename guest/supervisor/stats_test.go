package supervisor

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestProcParsing(t *testing.T) {
	proc := t.TempDir()
	writeFiles(t, proc, map[string]string{
		"stat":    "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n",
		"meminfo": "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    250 kB\n",
		"1/stat":  "", "42/stat": "", "self/stat": "", "sys/x": "",
	})
	prev, err := readCPU(proc)
	if err != nil || prev.total != 1000 || prev.busy != 200 {
		t.Fatalf("readCPU = %+v, %v; want busy 200 of 1000", prev, err)
	}
	tests := []struct {
		name string
		cur  cpuTimes
		want float64
	}{
		{"half busy", cpuTimes{busy: 300, total: 1200}, 50},
		{"idle", cpuTimes{busy: 200, total: 1100}, 0},
		{"no time passed", prev, 0},
		{"counter went back", cpuTimes{busy: 100, total: 2000}, 0},
	}
	for _, tt := range tests {
		if got := tt.cur.percentSince(prev); got != tt.want {
			t.Errorf("%s: percentSince = %v, want %v", tt.name, got, tt.want)
		}
	}
	used, total, err := readMem(proc)
	if err != nil || used != 750*1024 || total != 1000*1024 {
		t.Errorf("readMem = %d/%d, %v; want 768000/1024000", used, total, err)
	}
	if n := countProcs(proc); n != 2 {
		t.Errorf("countProcs = %d, want 2", n)
	}
	if _, _, err := readMem(t.TempDir()); err == nil {
		t.Error("readMem of an empty dir succeeded")
	}
}

func TestRuneCut(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"ab\xc3", 2},            // first byte of é
		{"ab\xc3\xa9", 4},        // whole é
		{"a\xe2\x9c", 1},         // two bytes of ✓
		{"\xf0\x9f\x98", 0},      // three of four
		{"a\xff", 2},             // not UTF-8: nothing to wait for
		{"a\x80\x80\x80\x80", 5}, // only continuation bytes
		{"\xf0\x9f\x98\x80", 4},  // complete 4-byte rune
	}
	for _, tt := range tests {
		if got := runeCut([]byte(tt.in)); got != tt.want {
			t.Errorf("runeCut(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestAgentUID(t *testing.T) {
	if got := agentUID(filepath.Join(t.TempDir(), "missing")); got != defaultAgentUID {
		t.Errorf("missing workspace: uid %d, want %d", got, defaultAgentUID)
	}
	d := t.TempDir()
	want := os.Getuid()
	if want == 0 {
		want = defaultAgentUID
	}
	if got := agentUID(d); got != want {
		t.Errorf("workspace of uid %d: agent uid %d, want %d", os.Getuid(), got, want)
	}
	if os.Getuid() != 0 {
		t.Skip("chown needs root")
	}
	for owner, want := range map[int]int{501: 501, 4242: 4242, 0: defaultAgentUID, 65534: defaultAgentUID} {
		if err := os.Chown(d, owner, owner); err != nil {
			t.Fatal(err)
		}
		if got := agentUID(d); got != want {
			t.Errorf("workspace owned by %d: agent uid %d, want %d", owner, got, want)
		}
	}
}
