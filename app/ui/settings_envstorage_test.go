package ui

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"sandbar/app/env/ociimage"
	"sandbar/app/env/prepared"
	"sandbar/tests/registrytest"
)

// rowButton is the button labelled text of row i of list.
func rowButton(t *testing.T, list *widget.List, i int, text string) *widget.Button {
	t.Helper()
	list.Resize(fyne.NewSize(800, 300))
	row := list.CreateItem()
	list.UpdateItem(i, row)
	for _, o := range test.LaidOutObjects(row) {
		if b, ok := o.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	t.Fatalf("row %d has no %s button", i, text)
	return nil
}

// TestStorageEnvironments: Settings → Storage lists the prepared
// environments (a ready one on a pulled image, a failed one) and the
// images pulled for them, with size, last use and state; Remove of the
// image a prepared environment boots on is refused, saying which; once
// that is removed, the image goes too, from the disk.
func TestStorageEnvironments(t *testing.T) {
	registrytest.NeedTool(t, "mkfs.ext4", "e2fsprogs")
	reg := registrytest.Start(t, "", "")
	h := newAppHarness(t)
	ctx := context.Background()

	// An image pulled into Sandbar's store from a real registry.
	layer, err := random.Layer(64<<10, "application/vnd.docker.image.rootfs.diff.tar.gzip")
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(randomBase(t), layer)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Push(t, "sandbar/envstorage:1", img)
	images := &ociimage.Store{Dir: h.env.Paths.EnvImages()}
	pulled, err := images.Pull(ctx, ref, ociimage.PullOptions{LocalTools: []string{}})
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}

	// A ready prepared environment on it, and a failed one elsewhere.
	a := h.addProject(t, "alpha")
	b := h.addProject(t, "beta")
	ready, err := h.preparedStore().Begin(strconv.FormatInt(a.ID, 10), strings.Repeat("e", 64))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(ready.Disk(), make([]byte, 2<<20), 0o600)
	if _, err := ready.Finish(prepared.Env{Commit: "abcdef0123", Image: ref, ImageDigest: pulled.Digest}); err != nil {
		t.Fatal(err)
	}
	failed, err := h.preparedStore().Begin(strconv.FormatInt(b.ID, 10), strings.Repeat("f", 64))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failed.Fail(prepared.Env{Commit: "9876543210"}, errors.New("onCreateCommand exited 1\n\x1b[2Jtail")); err != nil {
		t.Fatal(err)
	}

	w := h.settings(t)
	selectTab(t, w.tabs, tabStorage)
	p := w.envStorage
	h.q.WaitFor(t, 5*time.Second, "three environments listed", func() bool { return len(p.items) == 3 })
	if !strings.HasPrefix(p.total.Text, "Environments: 3, ") {
		t.Errorf("heading %q", p.total.Text)
	}
	byLabel := func(prefix string) envStorageItem {
		for _, it := range p.items {
			if strings.HasPrefix(it.label, prefix) {
				return it
			}
		}
		t.Fatalf("no row %q in %+v", prefix, p.items)
		return envStorageItem{}
	}
	r := byLabel("alpha · prepared environment eeeeeeeeeeee on abcdef0 · " + ref)
	if r.state != "ready" || r.used != "used just now" || r.bytes < 2<<20 {
		t.Errorf("the ready row: %+v", r)
	}
	f := byLabel("beta · prepared environment ffffffffffff on 9876543")
	if f.state != "failed: onCreateCommand exited 1" {
		t.Errorf("the failed row: %+v", f)
	}
	im := byLabel("image " + ref + " · sha256:")
	if im.state != "in use: the prepared environment eeeeeeeeeeee of project alpha" || im.bytes != pulled.Size {
		t.Errorf("the image row: %+v (pulled %d bytes)", im, pulled.Size)
	}

	removeRow := func(label string) {
		t.Helper()
		for i, it := range p.items {
			if strings.HasPrefix(it.label, label) {
				test.Tap(rowButton(t, p.list, i, "Remove"))
				test.Tap(overlayButton(t, w.win, "Remove"))
				return
			}
		}
		t.Fatalf("no row %q", label)
	}
	removeRow("image ")
	h.q.WaitFor(t, 5*time.Second, "the image's removal refused", func() bool { return strings.HasPrefix(p.status.Text, "Not removed") })
	if !strings.Contains(p.status.Text, "the prepared environment eeeeeeeeeeee of project alpha boots on it") {
		t.Errorf("refusal: %q", p.status.Text)
	}
	if _, err := images.Get(pulled.Digest); err != nil {
		t.Fatalf("a refused removal removed the image: %v", err)
	}

	removeRow("alpha · ")
	h.q.WaitFor(t, 5*time.Second, "the prepared environment removed", func() bool {
		return strings.HasPrefix(p.status.Text, "Removed alpha · prepared environment") && len(p.items) == 2
	})
	h.q.WaitFor(t, 5*time.Second, "the image free", func() bool {
		return byLabel("image ").state == "image, linux/"+runtime.GOARCH
	})
	removeRow("image ")
	h.q.WaitFor(t, 5*time.Second, "the image removed", func() bool { return strings.HasPrefix(p.status.Text, "Removed image ") && len(p.items) == 1 })
	if _, err := images.Get(pulled.Digest); !errors.Is(err, ociimage.ErrNotStored) {
		t.Errorf("the removed image is still stored: %v", err)
	}
}

// randomBase is an empty linux image of this machine's architecture.
func randomBase(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	return registrytest.Platform(t, img, runtime.GOARCH, nil)
}
