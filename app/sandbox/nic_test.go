package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"sandbar/vm/vmtest"
)

// TestNICPairNotInherited: a NIC's socket pair is made while other
// sessions start their hypervisors; a child started meanwhile must not
// inherit either end (it would hold another session's link open, and
// carry frames into a VM not its own).
func TestNICPairNotInherited(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to list a child's files")
	}
	hv := &vmtest.Hypervisor{}
	const rounds = 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			host, guest, _, err := NICPair(hv)
			if err != nil {
				t.Error(err)
				return
			}
			host.Close()
			guest.Close()
		}
	})
	leaked := 0
	for range rounds {
		// The child lists what its descriptors are: a socket among them
		// is one it inherited.
		out, err := exec.Command("ls", "-l", "/proc/self/fd/").Output()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "socket:") {
			leaked++
		}
	}
	close(stop)
	wg.Wait()
	if leaked > 0 {
		t.Errorf("%d of %d children started beside NICPair inherited its sockets", leaked, rounds)
	}
}
