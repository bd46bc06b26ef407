package libvirt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDomainRecord: what Boot records of a domain reads back; a missing
// record is none, and a record that is not one of Sandbar's (garbage,
// too large, a name that is no VM's) is an error, never a domain to end.
func TestDomainRecord(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := readDomainRecord(dir); ok || err != nil {
		t.Fatalf("no record: ok %v, err %v", ok, err)
	}
	want := domainRecord{Host: "box", Domain: "sandbar-0123456789", UUID: strings.Repeat("ab", 16), Owner: "me pid 1"}
	if err := writeDomainRecord(dir, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := readDomainRecord(dir)
	if !ok || err != nil || got != want {
		t.Fatalf("read back %+v ok %v err %v, want %+v", got, ok, err, want)
	}
	for name, data := range map[string]string{
		"garbage":   "not json",
		"too large": `{"host":"` + strings.Repeat("x", maxDomainFile) + `"}`,
		"bad name":  `{"host":"box","domain":"../x","uuid":"` + strings.Repeat("ab", 16) + `"}`,
		"bad uuid":  `{"host":"box","domain":"sandbar-1","uuid":"ab"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, DomainFile), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := readDomainRecord(dir); ok || err == nil {
			t.Errorf("%s: ok %v, err %v; want an error", name, ok, err)
		}
	}
}

// TestReapOrphanLeavesOthers: a VM directory without a record, or with
// one of another host, is nothing for this host's reaper, which then
// connects nowhere (its target here is unreachable).
func TestReapOrphanLeavesOthers(t *testing.T) {
	tg, err := ParseTarget("ssh://nobody@127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	h := New(Config{Name: "here", Target: tg})
	dir := t.TempDir()
	if killed, err := h.ReapOrphan(context.Background(), dir); killed || err != nil {
		t.Fatalf("no record: killed %v, err %v", killed, err)
	}
	rec := domainRecord{Host: "elsewhere", Domain: "sandbar-1", UUID: strings.Repeat("ab", 16), Owner: "me"}
	if err := writeDomainRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	if killed, err := h.ReapOrphan(context.Background(), dir); killed || err != nil {
		t.Fatalf("another host's record: killed %v, err %v", killed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, DomainFile)); err != nil {
		t.Errorf("another host's record was removed: %v", err)
	}
	rec.Host = "here"
	writeDomainRecord(dir, rec)
	if killed, err := h.ReapOrphan(context.Background(), dir); killed || err == nil || !strings.Contains(err.Error(), "here") {
		t.Errorf("an unreachable host: killed %v, err %v; want an error naming the host", killed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, DomainFile)); err != nil {
		t.Errorf("the record of a host that could not be reached was removed: %v", err)
	}
}
