package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sandbar/guest/image"
	"sandbar/guest/protocol"
	"sandbar/vm"
	"sandbar/vm/vmtest"
)

func testImage(t *testing.T) *image.Image {
	t.Helper()
	d := t.TempDir()
	img := &image.Image{Dir: d, Kernel: filepath.Join(d, "kernel"), Initramfs: filepath.Join(d, "initramfs"),
		RootFS: filepath.Join(d, "rootfs.ext4"), AgentDisk: filepath.Join(d, "agent.ext4")}
	for _, f := range []string{img.Kernel, img.Initramfs, img.RootFS, img.AgentDisk} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

var allNetworks = []vm.Network{vm.NetworkOff, vm.NetworkNAT, vm.NetworkSocket}

// qemuLike is a backend that mounts shares over 9p and gives its NAT's
// fixed addresses, and names no channel.
var qemuLike = vm.Info{ShareKinds: []vm.ShareKind{vm.Share9p}, Networks: allNetworks, NATNet: "static:10.0.2.15/24,10.0.2.2,10.0.2.3"}

// vzLike is a backend whose guests have only vsock, as
// Virtualization.framework's do.
var vzLike = vm.Info{Channel: vm.ChannelVsock, ShareKinds: []vm.ShareKind{vm.ShareVirtiofs}, Networks: allNetworks, NATNet: "dhcp"}

// plain is a backend that names nothing and offers no network.
var plain = vm.Info{}

func TestSpecFor(t *testing.T) {
	img := testImage(t)
	dir := t.TempDir()
	share := filepath.Join(t.TempDir(), "my repo ü")
	when := time.Unix(1700000000, 0)

	spec, err := SpecFor(img, qemuLike, Options{Dir: dir, ScratchSize: 1 << 30, Share: share, ShareReadOnly: true, Network: true, Time: when})
	if err != nil {
		t.Fatal(err)
	}
	wantDisks := []vm.Disk{{Path: img.RootFS, ReadOnly: true}, {Path: img.AgentDisk, ReadOnly: true}, {Path: filepath.Join(dir, ScratchFile)}}
	if len(spec.Disks) != 3 {
		t.Fatalf("disks = %+v", spec.Disks)
	}
	for i, d := range wantDisks {
		if spec.Disks[i] != d {
			t.Errorf("disk %d = %+v, want %+v", i, spec.Disks[i], d)
		}
	}
	if len(spec.Shares) != 1 || spec.Shares[0] != (vm.Share{Tag: "workspace", HostPath: share, ReadOnly: true}) {
		t.Errorf("shares = %+v", spec.Shares)
	}
	if spec.CPUs != DefaultCPUs || spec.Memory != DefaultMemory || spec.Network != vm.NetworkNAT {
		t.Errorf("limits = %d cpus, %d bytes, %s", spec.CPUs, spec.Memory, spec.Network)
	}
	got := strings.Join(spec.CommandLine, " ")
	for _, want := range []string{"sandbar.root=/dev/vda", "sandbar.agent=/dev/vdb", "sandbar.scratch=/dev/vdc",
		"sandbar.share=9p", "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3", "sandbar.time=1700000000"} {
		if !strings.Contains(got, want) {
			t.Errorf("command line %q lacks %q", got, want)
		}
	}
	if spec.ConsoleLog != filepath.Join(dir, ConsoleFile) || spec.Dir != dir {
		t.Errorf("console %s dir %s", spec.ConsoleLog, spec.Dir)
	}

	// No scratch, no share, no network.
	spec, err = SpecFor(img, plain, Options{Dir: dir, CPUs: 1, Memory: 512 * vm.MiB})
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(spec.CommandLine, " ")
	if len(spec.Disks) != 2 || len(spec.Shares) != 0 || spec.Network != vm.NetworkOff ||
		strings.Contains(got, "sandbar.scratch") || !strings.Contains(got, "sandbar.share=none") || !strings.Contains(got, "sandbar.net=none") {
		t.Errorf("minimal spec: disks %v shares %v net %s cmdline %q", spec.Disks, spec.Shares, spec.Network, got)
	}

	if strings.Contains(got, "sandbar.channel") {
		t.Errorf("a backend that names no channel got one: %q", got)
	}

	// A backend that names its channel: the guest goes straight to it.
	spec, err = SpecFor(img, vzLike, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(spec.CommandLine, " "); !strings.Contains(got, "sandbar.channel=vsock") {
		t.Errorf("vz-like command line %q lacks sandbar.channel=vsock", got)
	}

	if _, err := SpecFor(nil, plain, Options{Dir: dir}); !errors.Is(err, image.ErrNotBuilt) {
		t.Errorf("nil image: %v, want ErrNotBuilt", err)
	}

	// What a backend's Info does not offer is refused, not booted wrong.
	nic := &vm.NIC{File: os.Stdin, MAC: net.HardwareAddr{0x5a, 0x94, 0xef, 1, 2, 3}, MTU: 1500}
	for name, o := range map[string]Options{
		"share": {Dir: dir, Share: share},
		"NAT":   {Dir: dir, Network: true},
		"NIC":   {Dir: dir, NIC: nic, NICArg: "dhcp"},
	} {
		if spec, err := SpecFor(img, plain, o); err == nil {
			t.Errorf("a %s on a backend without one: spec %+v, want an error", name, spec)
		}
	}
	if _, err := SpecFor(img, plain, Options{Dir: dir, NIC: nic, NICArg: "dhcp"}); !errors.Is(err, ErrNoSocketNetwork) {
		t.Errorf("a NIC on a backend without socket networks: %v, want ErrNoSocketNetwork", err)
	}
}

func TestBootExecShutdown(t *testing.T) {
	hv := &vmtest.Hypervisor{}
	ws := t.TempDir()
	var events []protocol.Event
	sb, err := Boot(context.Background(), hv, testImage(t), Options{Dir: t.TempDir(), Share: ws,
		OnEvent: func(ev protocol.Event) { events = append(events, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Ready.Version != protocol.Version || sb.ReadyAfter <= 0 {
		t.Errorf("ready = %+v after %s", sb.Ready, sb.ReadyAfter)
	}

	var stdout, stderr bytes.Buffer
	res, err := sb.Client.Exec(context.Background(), ExecRequest{
		Argv: []string{"sh", "-c", "pwd; printf 'in:%s' \"$(cat)\"; echo oops >&2; echo made > made.txt; exit 7"},
		Cwd:  ws, Stdin: []byte("hello"),
	}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != 7 || stdout.String() != ws+"\nin:hello" || stderr.String() != "oops\n" {
		t.Errorf("exec: code %d stdout %q stderr %q", res.Code, stdout.String(), stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("workspace file: %q, %v", b, err)
	}

	// Several at once.
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			var out bytes.Buffer
			res, err := sb.Client.Exec(context.Background(), ExecRequest{Argv: []string{"sh", "-c", "sleep 0.2; echo $X"}, Env: map[string]string{"X": "x"}}, &out, nil)
			if err == nil && (res.Code != 0 || out.String() != "x\n") {
				err = errors.New("concurrent exec: code " + out.String())
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}

	// Timeout and cancellation kill it.
	res, err = sb.Client.Exec(context.Background(), ExecRequest{Argv: []string{"sleep", "30"}, Timeout: 100 * time.Millisecond}, nil, nil)
	if err != nil || !res.TimedOut {
		t.Errorf("timeout: %+v %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	_, err = sb.Client.Exec(ctx, ExecRequest{Argv: []string{"sleep", "30"}}, nil, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("cancelled exec: %v after %s", err, time.Since(start))
	}

	// A program that does not exist is an error, not a hang.
	if _, err := sb.Client.Exec(context.Background(), ExecRequest{Argv: []string{"/no/such/program"}}, nil, nil); err == nil {
		t.Error("exec of a missing program succeeded")
	}

	if err := sb.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if n := hv.Booted()[0].Sys.Poweroffs(); n != 1 {
		t.Errorf("poweroffs = %d, want 1", n)
	}
	if sb.Client.SeqGaps() != 0 {
		t.Errorf("%d sequence gaps", sb.Client.SeqGaps())
	}
	if _, err := sb.Client.Exec(context.Background(), ExecRequest{Argv: []string{"true"}}, nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("exec after shutdown: %v, want ErrClosed", err)
	}
	<-sb.Client.Done()
	if len(events) == 0 || events[0].Ev != protocol.EvReady {
		t.Errorf("OnEvent got %d events, first %+v", len(events), events)
	}
}

func TestBootTimeoutShowsConsole(t *testing.T) {
	hv := &vmtest.Hypervisor{NeverReady: true}
	dir := t.TempDir()
	_, err := Boot(context.Background(), hv, testImage(t), Options{Dir: dir, ReadyTimeout: 200 * time.Millisecond})
	if !errors.Is(err, vm.ErrBootTimeout) {
		t.Fatalf("err = %v, want ErrBootTimeout", err)
	}
	if !strings.Contains(err.Error(), "vmtest: in-process machine") || !strings.Contains(err.Error(), "console.log") {
		t.Errorf("error lacks the console tail: %v", err)
	}
}

func TestBootBadInputs(t *testing.T) {
	hv := &vmtest.Hypervisor{}
	img := testImage(t)
	if _, err := Boot(context.Background(), hv, img, Options{Dir: t.TempDir(), Share: "/no/such/folder"}); err == nil ||
		!strings.Contains(err.Error(), "not a directory") {
		t.Errorf("missing share: %v", err)
	}
	if _, err := Boot(context.Background(), hv, img, Options{Dir: t.TempDir(), CPUs: -1}); !errors.Is(err, vm.ErrInvalidSpec) {
		t.Errorf("bad cpus: %v", err)
	}
	boom := errors.New("boom")
	if _, err := Boot(context.Background(), &vmtest.Hypervisor{BootErr: boom}, img, Options{Dir: t.TempDir()}); !errors.Is(err, boom) {
		t.Errorf("boot error: %v", err)
	}
}

func TestScratchKeepsContents(t *testing.T) {
	p := filepath.Join(t.TempDir(), "scratch.img")
	if err := ensureScratch(p, 1<<30); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(p, os.O_WRONLY, 0)
	f.WriteAt([]byte("data"), 4096)
	f.Close()
	if err := ensureScratch(p, 1<<20); err != nil { // smaller: never shrinks
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	b := make([]byte, 4)
	f, _ = os.Open(p)
	f.ReadAt(b, 4096)
	f.Close()
	if fi.Size() != 1<<30 || string(b) != "data" {
		t.Errorf("size %d, contents %q", fi.Size(), b)
	}
}

// Virtualization.framework refuses a disk image whose size is not a whole
// number of 512-byte sectors: whatever size is asked for, fractions of a
// GiB from `sandbar vm run --disk` included, the scratch disk made is a
// whole MiB, at least that size and less than a MiB more.
func TestScratchSizeWholeMiB(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	gibs := []float64{0.3, 0.1, 1.5, 1e-9, 2.0 / 3, 1023.999}
	for range 200 {
		gibs = append(gibs, r.Float64()*64)
	}
	for i, gib := range gibs {
		want := int64(gib * (1 << 30)) // as the CLI computes it
		if want <= 0 {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("scratch-%d.img", i))
		if err := ensureScratch(p, want); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Size(); got%vm.MiB != 0 || got%512 != 0 || got < want || got-want >= vm.MiB {
			t.Fatalf("--disk %v (%d bytes) made a %d-byte disk: want a whole MiB at least as large", gib, want, got)
		}
	}
	// A disk an older Sandbar made at an odd size is grown to whole MiB,
	// contents kept.
	p := filepath.Join(dir, "old.img")
	if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 322122547); err != nil { // int64(0.3 GiB)
		t.Fatal(err)
	}
	if err := ensureScratch(p, 1<<20); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	b := make([]byte, 4)
	f.ReadAt(b, 0)
	if fi.Size() != 308*vm.MiB || string(b) != "data" {
		t.Errorf("the odd-sized disk is now %d bytes starting %q, want %d starting \"data\"", fi.Size(), b, 308*vm.MiB)
	}
}

func TestConsoleTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "console.log")
	var b strings.Builder
	for i := 0; i < 100; i++ {
		b.WriteString("line " + strings.Repeat("x", i%3) + "\r\n")
	}
	b.WriteString("\x1b[0;32mlast\x1b[0m\r\n\n")
	os.WriteFile(p, []byte(b.String()), 0o644)
	got := strings.Split(ConsoleTail(p, 3), "\n")
	if len(got) != 3 || got[2] != "last" || !strings.HasPrefix(got[0], "line ") {
		t.Errorf("tail = %q", got)
	}
	if ConsoleTail(filepath.Join(t.TempDir(), "none"), 3) != "" {
		t.Error("tail of a missing file is not empty")
	}
}

// TestSpecForWorkspaceDisk: a workspace disk is the read-only fourth disk
// after the scratch disk it needs, and excludes a share.
func TestSpecForWorkspaceDisk(t *testing.T) {
	img := &image.Image{Kernel: "/i/k", Initramfs: "/i/r", RootFS: "/i/root.ext4", AgentDisk: "/i/agent.ext4"}
	spec, err := SpecFor(img, plain, Options{Dir: "/s", ScratchSize: 1 << 30, Workspace: "/p/base.ext4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Disks) != 4 || spec.Disks[3] != (vm.Disk{Path: "/p/base.ext4", ReadOnly: true}) || spec.Disks[2].ReadOnly {
		t.Errorf("disks %+v", spec.Disks)
	}
	if !slices.Contains(spec.CommandLine, "sandbar.workspace=/dev/vdd") || !slices.Contains(spec.CommandLine, "sandbar.scratch=/dev/vdc") || len(spec.Shares) != 0 {
		t.Errorf("command line %q shares %+v", spec.CommandLine, spec.Shares)
	}
	if _, err := SpecFor(img, plain, Options{Dir: "/s", Workspace: "/p/base.ext4"}); err == nil {
		t.Error("a workspace disk without a scratch disk was accepted")
	}
	if _, err := SpecFor(img, plain, Options{Dir: "/s", ScratchSize: 1 << 30, Workspace: "/p/base.ext4", Share: "/tmp"}); err == nil {
		t.Error("a workspace disk with a share was accepted")
	}
}

// TestSpecForImageRoot: another image's root is vda, and Sandbar's own
// root comes last, read-only, named sandbar.tools.
func TestSpecForImageRoot(t *testing.T) {
	img := &image.Image{Kernel: "/i/k", Initramfs: "/i/r", RootFS: "/i/root.ext4", AgentDisk: "/i/agent.ext4"}
	spec, err := SpecFor(img, plain, Options{Dir: "/s", ScratchSize: 1 << 30, Workspace: "/p/base.ext4", Root: "/env/node.ext4"})
	if err != nil {
		t.Fatal(err)
	}
	want := []vm.Disk{{Path: "/env/node.ext4", ReadOnly: true}, {Path: "/i/agent.ext4", ReadOnly: true}, {Path: "/s/scratch.img"},
		{Path: "/p/base.ext4", ReadOnly: true}, {Path: "/i/root.ext4", ReadOnly: true}}
	if !slices.Equal(spec.Disks, want) {
		t.Errorf("disks %+v, want %+v", spec.Disks, want)
	}
	for _, arg := range []string{"sandbar.root=/dev/vda", "sandbar.workspace=/dev/vdd", "sandbar.tools=/dev/vde"} {
		if !slices.Contains(spec.CommandLine, arg) {
			t.Errorf("command line %q lacks %s", spec.CommandLine, arg)
		}
	}
	// Sandbar's own root: no tools disk.
	spec, err = SpecFor(img, plain, Options{Dir: "/s", ScratchSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(spec.CommandLine, " "), "sandbar.tools") || len(spec.Disks) != 3 {
		t.Errorf("default root: disks %+v, command line %q", spec.Disks, spec.CommandLine)
	}
	if _, err := SpecFor(img, plain, Options{Dir: "/s", Root: "/env/node.ext4"}); err == nil {
		t.Error("an image's root without a scratch disk was accepted")
	}
}

func TestCheckRoot(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ext4")
	b := make([]byte, 4096)
	b[1024+56], b[1024+57] = 0x53, 0xEF
	os.WriteFile(good, b, 0o644)
	bad := filepath.Join(dir, "bad.ext4")
	os.WriteFile(bad, make([]byte, 4096), 0o644)
	if err := CheckRoot(good); err != nil {
		t.Errorf("an ext4 superblock was refused: %v", err)
	}
	for _, p := range []string{bad, dir, filepath.Join(dir, "missing")} {
		if err := CheckRoot(p); err == nil {
			t.Errorf("%s was taken for a root disk", p)
		}
	}
	if err := CheckRoot(bad); !strings.Contains(err.Error(), "not an ext4 file system") {
		t.Errorf("error %q does not say why", err)
	}
}

// TestStartNotes: the guest's notes reach the log as one line each of
// printable text, without the terminal escapes an image could plant.
func TestStartNotes(t *testing.T) {
	ev := Event{Ev: EvAgentStarted, Notes: []string{
		"the agent runs as the image's user node (uid 1000)",
		"two\nlines\r\x1b]0;title\x07 and \x1b[31mred\x1b[0m",
		" \n ",
	}}
	got := StartNotes(ev)
	if len(got) != 2 || got[0] != ev.Notes[0] || !strings.HasPrefix(got[1], "two lines ") || !strings.HasSuffix(got[1], " and red") {
		t.Errorf("StartNotes = %q", got)
	}
	for _, n := range got {
		if strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("note %q holds a control character", n)
		}
	}
}
