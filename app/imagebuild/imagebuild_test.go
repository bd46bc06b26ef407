package imagebuild

import "testing"

// TestStage: each stage of a build moves the bar on, and a finished
// build fills it.
func TestStage(t *testing.T) {
	last := -1.0
	for _, p := range []Progress{{Stage: "index"}, {Stage: "download", Of: 40}, {Stage: "download", Count: 20, Of: 40},
		{Stage: "download", Count: 40, Of: 40}, {Stage: "rootfs"}, {Stage: "kernel"}, {Stage: "initramfs"}, {Stage: "agent"}, {Stage: "done"}} {
		s, f := Stage(p)
		if f <= last || s == "" {
			t.Errorf("%+v: %q %v does not move on from %v", p, s, f, last)
		}
		last = f
	}
	if last != 1 {
		t.Errorf("done is %v, want 1", last)
	}
}
