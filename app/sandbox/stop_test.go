package sandbox

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"sandbar/vm"
	"sandbar/vm/vmtest"
)

// TestStopGuestNeverReads: a guest that never reads its channel cannot
// hold Stop: the shutdown line stays unsent, the machine's own Stop ends
// the VM within the deadline, and nothing is left writing.
func TestStopGuestNeverReads(t *testing.T) {
	hv := &vmtest.Hypervisor{NeverReady: true}
	m, err := hv.Boot(context.Background(), mustSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	sb := &Sandbox{Machine: m, Client: NewClient(m.Conn(), ClientOptions{}), log: slog.New(slog.DiscardHandler)}
	const budget = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	if err := sb.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(start); took > budget+2*time.Second {
		t.Errorf("Stop took %s of a %s budget", took, budget)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	m.Wait(wctx)
	if wctx.Err() != nil {
		t.Errorf("the VM still runs 5 s after Stop returned")
	}
	if hv.Booted()[0].Sys.Poweroffs() != 0 {
		t.Errorf("a guest that never read the shutdown powered off")
	}
}

func mustSpec(t *testing.T) vm.Spec {
	t.Helper()
	spec, err := SpecFor(testImage(t), (&vmtest.Hypervisor{}).Info(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
