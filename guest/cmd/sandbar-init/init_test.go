//go:build linux

package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbar/guest/protocol"
)

func TestReadModuleList(t *testing.T) {
	in := "lib/modules/6.1/kernel/drivers/virtio/virtio_ring.ko:\n\n# comment\n" +
		"/lib/modules/6.1/kernel/fs/jbd2/jbd2.ko\n" +
		"lib/modules/6.1/kernel/lib/crc16.ko:\n" +
		"lib/modules/6.1/kernel/fs/ext4/ext4.ko: lib/modules/6.1/kernel/fs/jbd2/jbd2.ko /lib/modules/6.1/kernel/lib/crc16.ko\n" +
		"  lib/x-y.ko  \n"
	idx, err := readModuleList(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"virtio_ring", "jbd2", "crc16", "ext4", "x_y"}; !reflect.DeepEqual(idx.order, want) {
		t.Errorf("order = %v, want %v", idx.order, want)
	}
	if got, want := idx.path["ext4"], "/lib/modules/6.1/kernel/fs/ext4/ext4.ko"; got != want {
		t.Errorf("path of ext4 = %q, want %q", got, want)
	}
	if got, want := idx.path["x_y"], "/lib/x-y.ko"; got != want {
		t.Errorf("path of x_y = %q, want %q", got, want)
	}
	if got, want := idx.deps["ext4"], []string{"jbd2", "crc16"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deps of ext4 = %v, want %v", got, want)
	}
	if len(idx.deps["jbd2"]) != 0 || len(idx.deps["virtio_ring"]) != 0 {
		t.Errorf("a line without dependencies got some: %v", idx.deps)
	}
	for _, bad := range []string{"a.ko: b.ko\nb.ko\n", "a.ko: a.ko\n"} {
		if _, err := readModuleList(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "not listed before it") {
			t.Errorf("list %q: err = %v, want one about order", bad, err)
		}
	}
}

func TestReadModIndexMissingList(t *testing.T) {
	dir := t.TempDir()
	idx, err := readModIndex(filepath.Join(dir, "modules"), filepath.Join(dir, "modules.alias"))
	if err != nil {
		t.Fatal(err)
	}
	l := &modLoader{idx: idx, loadFile: func(string, string) error { t.Fatal("loaded a module from no list"); return nil }}
	if n, err := loadModules(l, dir, config{root: "/dev/vda"}); n != 0 || err != nil {
		t.Fatalf("loadModules on no list = %d, %v; want 0, nil", n, err)
	}
}

// testModIndex writes a module list and alias file shaped like the ones
// guest/image/initramfs.Build writes, and reads them back.
func testModIndex(t *testing.T, withAliases bool) *modIndex {
	t.Helper()
	dir := t.TempDir()
	var list strings.Builder
	for _, l := range [][]string{
		{"virtio"}, {"virtio_ring"}, {"virtio_mmio", "virtio", "virtio_ring"},
		{"virtio_pci", "virtio", "virtio_ring"},
		{"virtio_console", "virtio", "virtio_ring"}, {"virtio_blk", "virtio", "virtio_ring"},
		{"virtio_net", "virtio", "virtio_ring"}, {"overlay"}, {"crc16"}, {"ext4", "crc16"},
		{"netfs"}, {"9pnet"}, {"9p", "9pnet", "netfs"}, {"9pnet_virtio", "9pnet", "virtio", "virtio_ring"},
		{"virtio_rng", "virtio", "virtio_ring"}, {"virtio_balloon", "virtio", "virtio_ring"},
	} {
		list.WriteString("lib/modules/6.1/" + l[0] + ".ko:")
		for _, d := range l[1:] {
			list.WriteString(" lib/modules/6.1/" + d + ".ko")
		}
		list.WriteString("\n")
	}
	aliases := "alias of:N*T*Cvirtio,mmio virtio_mmio\nalias acpi*:LNRO0005:* virtio_mmio\n" +
		"alias pci:v00001AF4d*sv*sd*bc*sc*i* virtio_pci\n" +
		"alias virtio:d00000003v* virtio_console\nalias virtio:d00000002v* virtio_blk\n" +
		"alias virtio:d00000001v* virtio_net\nalias fs-overlay overlay\nalias fs-ext4 ext4\nalias ext2 ext4\n" +
		"alias fs-9p 9p\nalias 9p-virtio 9pnet_virtio\nalias virtio:d00000009v* 9pnet_virtio\n" +
		"alias virtio:d00000004v* virtio_rng\nalias virtio:d00000005v* virtio_balloon\n"
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	listFile := write("modules", list.String())
	aliasFile := filepath.Join(dir, "modules.alias")
	if withAliases {
		write("modules.alias", aliases)
	}
	idx, err := readModIndex(listFile, aliasFile)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// testSys makes a /sys with the given devices, each "bus/name" → modalias.
func testSys(t *testing.T, devices map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for dev, alias := range devices {
		bus, name, _ := strings.Cut(dev, "/")
		d := filepath.Join(root, "bus", bus, "devices", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "modalias"), []byte(alias+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// microvmDevices is what a microvm guest's /sys lists with the root and
// agent disks: virtio-mmio transports, the serial port, and on the virtio
// bus the console and two disks.
var microvmDevices = map[string]string{
	"platform/LNRO0005:00": "acpi:LNRO0005:",
	"platform/LNRO0005:01": "acpi:LNRO0005:",
	"platform/serial8250":  "platform:serial8250",
	"virtio/virtio0":       "virtio:d00000003v554D4551",
	"virtio/virtio1":       "virtio:d00000002v554D4551",
	"virtio/virtio2":       "virtio:d00000002v554D4551",
}

// withNetAndShare is microvmDevices plus a NIC and a 9p share.
func withNetAndShare() map[string]string {
	m := map[string]string{"virtio/virtio3": "virtio:d00000001v554D4551", "virtio/virtio4": "virtio:d00000009v554D4551"}
	for k, v := range microvmDevices {
		m[k] = v
	}
	return m
}

func TestLoadModules(t *testing.T) {
	microvm, withNet := microvmDevices, withNetAndShare()
	pciMachine := map[string]string{
		"pci/0000:00:01.0":       "pci:v00001AF4d00001043sv00001AF4sd00001100bc07sc80i00",
		"pci/0000:00:00.0":       "pci:v00001B36d00000008sv00001AF4sd00001100bc06sc00i00",
		"virtio/virtio0":         "virtio:d00000003v00001AF4",
		"virtio/virtio1":         "virtio:d00000002v00001AF4",
		"platform/9000000.pl011": "of:NplT(null)Carm,pl011",
	}
	vzMachine := map[string]string{
		"pci/0000:00:01.0": "pci:v00001AF4d00001043sv00001AF4sd00001100bc07sc80i00",
		"pci/0000:00:02.0": "pci:v00001AF4d00001041sv00001AF4sd00001100bc02sc00i00",
		"pci/0000:00:03.0": "pci:v00001AF4d00001042sv00001AF4sd00001100bc01sc00i00",
		"pci/0000:00:04.0": "pci:v00001AF4d00001044sv00001AF4sd00001100bc00sc00i00",
		"pci/0000:00:05.0": "pci:v00001AF4d00001045sv00001AF4sd00001100bc05sc00i00",
		"virtio/virtio0":   "virtio:d00000003v00001AF4",
		"virtio/virtio1":   "virtio:d00000001v00001AF4",
		"virtio/virtio2":   "virtio:d00000002v00001AF4",
		"virtio/virtio3":   "virtio:d00000004v00001AF4",
		"virtio/virtio4":   "virtio:d00000005v00001AF4",
	}
	tests := []struct {
		name    string
		devices map[string]string
		cfg     config
		aliases bool
		want    []string
	}{
		{
			name: "microvm, root disks, no network, no share", devices: microvm,
			cfg:     config{root: "/dev/vda", agent: "/dev/vdb", share: "none"},
			aliases: true,
			want:    []string{"virtio", "virtio_ring", "virtio_mmio", "virtio_console", "virtio_blk", "overlay", "crc16", "ext4"},
		},
		{
			name: "network and a 9p share", devices: withNet,
			cfg:     config{root: "/dev/vda", share: "9p"},
			aliases: true,
			want: []string{"virtio", "virtio_ring", "virtio_mmio", "virtio_console", "virtio_blk", "virtio_net",
				"overlay", "crc16", "ext4", "netfs", "9pnet", "9p", "9pnet_virtio"},
		},
		{
			name: "virtio over PCI", devices: pciMachine,
			cfg:     config{share: "none"},
			aliases: true,
			want:    []string{"virtio", "virtio_ring", "virtio_pci", "virtio_console", "virtio_blk"},
		},
		{
			// Virtualization.framework's devices: its entropy and balloon
			// devices (virtio IDs 4 and 5) get their drivers.
			name: "vz: virtio over PCI with entropy and balloon", devices: vzMachine,
			cfg:     config{root: "/dev/vda", share: "none"},
			aliases: true,
			want: []string{"virtio", "virtio_ring", "virtio_pci", "virtio_console", "virtio_blk", "virtio_net",
				"overlay", "crc16", "ext4", "virtio_rng", "virtio_balloon"},
		},
		{
			name: "no alias list: everything, in order", devices: microvm,
			cfg: config{share: "none"},
			want: []string{"virtio", "virtio_ring", "virtio_mmio", "virtio_pci", "virtio_console", "virtio_blk", "virtio_net",
				"overlay", "crc16", "ext4", "netfs", "9pnet", "9p", "9pnet_virtio", "virtio_rng", "virtio_balloon"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			l := &modLoader{
				idx:    testModIndex(t, tt.aliases),
				params: map[string][]string{"ext4": {"x=1", "y=2"}},
				loadFile: func(file, params string) error {
					name := moduleName(file)
					got = append(got, name)
					if want := map[string]string{"ext4": "x=1 y=2"}[name]; params != want {
						t.Errorf("%s loaded with params %q, want %q", name, params, want)
					}
					return nil
				},
			}
			n, err := loadModules(l, testSys(t, tt.devices), tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) || n != len(tt.want) {
				t.Fatalf("loaded %d: %v\nwant %v", n, got, tt.want)
			}
		})
	}
}

func TestLoadModulesConcurrently(t *testing.T) {
	devices := withNetAndShare()
	delete(devices, "virtio/virtio3") // no NIC
	idx := testModIndex(t, true)
	for _, workers := range []int{2, 3} {
		var (
			mu            sync.Mutex
			loaded        = map[string]bool{}
			running, most int
		)
		l := &modLoader{
			idx:     idx,
			workers: workers,
			loadFile: func(file, _ string) error {
				name := moduleName(file)
				mu.Lock()
				for _, d := range idx.deps[name] {
					if !loaded[d] {
						t.Errorf("%s loading before %s, which it needs", name, d)
					}
				}
				if loaded[name] {
					t.Errorf("%s loaded twice", name)
				}
				running++
				most = max(most, running)
				mu.Unlock()
				// Not a wait: a load that takes a moment, so loads that
				// may run at once do overlap and most counts them.
				time.Sleep(time.Millisecond)
				mu.Lock()
				loaded[name] = true
				running--
				mu.Unlock()
				return nil
			},
		}
		n, err := loadModules(l, testSys(t, devices), config{root: "/dev/vda", share: "9p"})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"virtio", "virtio_ring", "virtio_mmio", "virtio_console", "virtio_blk",
			"overlay", "crc16", "ext4", "netfs", "9pnet", "9p", "9pnet_virtio"}
		if n != len(want) || len(loaded) != len(want) {
			t.Errorf("workers %d: loaded %d (%v), want %v", workers, n, loaded, want)
		}
		for _, m := range want {
			if !loaded[m] {
				t.Errorf("workers %d: %s not loaded", workers, m)
			}
		}
		if most > workers {
			t.Errorf("workers %d: %d modules loaded at once", workers, most)
		}
	}
}

func TestLoadModulesStopsAtFailure(t *testing.T) {
	l := &modLoader{
		idx: testModIndex(t, true),
		loadFile: func(file, _ string) error {
			if moduleName(file) == "virtio_ring" {
				return errors.New("boom")
			}
			return nil
		},
	}
	sys := testSys(t, map[string]string{"platform/LNRO0005:00": "acpi:LNRO0005:"})
	if n, err := loadModules(l, sys, config{share: "none"}); err == nil || n != 1 {
		t.Fatalf("loadModules = %d, %v; want 1 and the failure", n, err)
	}
	l.workers, l.loads, l.once, l.n = 2, nil, sync.Once{}, 0
	if n, err := loadModules(l, sys, config{root: "/dev/vda", share: "none"}); err == nil || n != 4 {
		// virtio, overlay, crc16 and ext4 load; virtio_mmio never starts.
		t.Fatalf("with 2 workers, loadModules = %d, %v; want 4 and the failure", n, err)
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{
		"/lib/modules/6.1/kernel/arch/x86/crypto/crc32c-intel.ko": "crc32c_intel",
		"/lib/modules/6.1/kernel/fs/9p/9p.ko":                     "9p",
	} {
		if got := moduleName(in); got != want {
			t.Errorf("moduleName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHasExt4Superblock(t *testing.T) {
	dir := t.TempDir()
	withMagic := make([]byte, 4096)
	withMagic[1080], withMagic[1081] = 0x53, 0xef
	wrongMagic := make([]byte, 4096)
	wrongMagic[1080], wrongMagic[1081] = 0xef, 0x53
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"ext4", withMagic, true},
		{"blank", make([]byte, 4096), false},
		{"byte-swapped", wrongMagic, false},
		{"shorter than a superblock", make([]byte, 512), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if err := os.WriteFile(p, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := hasExt4Superblock(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("hasExt4Superblock = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := hasExt4Superblock(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("no error for a missing disk")
	}
}

func TestReceiveGoAhead(t *testing.T) {
	pair := func(t *testing.T) (pid1, sup int) {
		t.Helper()
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return fds[0], fds[1]
	}
	dir := t.TempDir()
	sameFile := func(t *testing.T, fd int, path string) {
		t.Helper()
		var got, want unix.Stat_t
		if err := unix.Fstat(fd, &got); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(path, &want); err != nil {
			t.Fatal(err)
		}
		if got.Ino != want.Ino || got.Dev != want.Dev {
			t.Errorf("received a handle on inode %d, want %s's %d", got.Ino, path, want.Ino)
		}
	}
	openDir := func(t *testing.T) int {
		t.Helper()
		d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(d) })
		return d
	}

	t.Run("go-ahead with the root", func(t *testing.T) {
		pid1, sup := pair(t)
		if err := sendGoAhead(pid1, goAhead{root: openDir(t), console: -1}); err != nil {
			t.Fatal(err)
		}
		g, err := receiveGoAhead(sup)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(g.root)
		sameFile(t, g.root, dir)
		if g.console != -1 {
			t.Errorf("a console came without one sent: fd %d", g.console)
		}
	})
	t.Run("go-ahead with the root and the console", func(t *testing.T) {
		pid1, sup := pair(t)
		cons := filepath.Join(dir, "console")
		f, err := os.Create(cons)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := sendGoAhead(pid1, goAhead{root: openDir(t), console: int(f.Fd())}); err != nil {
			t.Fatal(err)
		}
		g, err := receiveGoAhead(sup)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(g.root)
		defer unix.Close(g.console)
		sameFile(t, g.root, dir)
		sameFile(t, g.console, cons)
		if g.netErr != "" {
			t.Errorf("a network error came without one sent: %q", g.netErr)
		}
	})
	t.Run("go-ahead with the network's error", func(t *testing.T) {
		for _, netErr := range []string{"DHCP on eth0: no server offered an address within 3s", strings.Repeat("x", protocol.MaxNetError+100)} {
			pid1, sup := pair(t)
			if err := sendGoAhead(pid1, goAhead{root: openDir(t), console: -1, netErr: netErr}); err != nil {
				t.Fatal(err)
			}
			g, err := receiveGoAhead(sup)
			if err != nil {
				t.Fatal(err)
			}
			unix.Close(g.root)
			if want := netErr[:min(len(netErr), protocol.MaxNetError)]; g.netErr != want {
				t.Errorf("network error %.40q... (%d bytes) arrived as %.40q... (%d bytes)", netErr, len(netErr), g.netErr, len(g.netErr))
			}
		}
	})
	t.Run("PID 1 gone", func(t *testing.T) {
		pid1, sup := pair(t)
		unix.Shutdown(pid1, unix.SHUT_WR)
		if _, err := receiveGoAhead(sup); err == nil || !strings.Contains(err.Error(), "ended before the machine was ready") {
			t.Fatalf("err = %v, want one saying PID 1 ended", err)
		}
	})
	t.Run("go-ahead without a root", func(t *testing.T) {
		pid1, sup := pair(t)
		if _, err := unix.Write(pid1, []byte(goAheadMsg)); err != nil {
			t.Fatal(err)
		}
		if _, err := receiveGoAhead(sup); err == nil || !strings.Contains(err.Error(), "without its root") {
			t.Fatalf("err = %v, want one saying the root is missing", err)
		}
	})
}
