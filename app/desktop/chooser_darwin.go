package desktop

/*
#cgo LDFLAGS: -framework AppKit
#include <stdint.h>
#include <stdlib.h>

void sandbarChooseFolder(uintptr_t handle, const char *message);
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"unsafe"
)

// FolderChooser is this desktop's folder chooser: NSOpenPanel, for
// folders only, begun on the main thread (chooser_darwin.m). Written
// against AppKit's documented API and type-checked by the darwin check;
// not yet run on a Mac.
func FolderChooser() ChooseFolder { return chooseFolderPanel }

// chosen is where the panel's answer arrives: a path, or ok false for a
// cancel.
type chosen struct {
	path string
	ok   bool
}

func chooseFolderPanel(ctx context.Context, title string) (string, error) {
	// Buffered, so that an answer after ctx ended finds room and the
	// handle is freed by the callback, which always runs once.
	answer := make(chan chosen, 1)
	h := cgo.NewHandle(answer)
	msg := C.CString(title)
	C.sandbarChooseFolder(C.uintptr_t(h), msg) // copies msg before returning
	C.free(unsafe.Pointer(msg))
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case a := <-answer:
		if !a.ok {
			return "", ErrCanceled
		}
		return a.path, nil
	}
}

//export sandbarFolderChosen
func sandbarFolderChosen(h C.uintptr_t, path *C.char) {
	handle := cgo.Handle(h)
	answer := handle.Value().(chan chosen)
	handle.Delete()
	if path == nil {
		answer <- chosen{}
		return
	}
	answer <- chosen{path: C.GoString(path), ok: true}
}
