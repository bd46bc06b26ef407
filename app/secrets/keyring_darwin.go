package secrets

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os/exec"
	"strconv"
	"time"

	"github.com/zalando/go-keyring"
)

// What go-keyring (v0.2.8) does on macOS, and so what its errors mean: it
// runs /usr/bin/security. Get and Delete keep the tool's output only to
// look for "could not be found" (keyring.ErrNotFound) and otherwise return
// the *exec.ExitError, whose status is the low byte of the Security
// framework's OSStatus:
//
//	36  errSecInteractionNotAllowed (-25308): locked, and no UI to ask (ssh, launchd)
//	29  errSecInteractionRequired   (-25315)
//	51  errSecAuthFailed            (-25293): wrong password at the unlock prompt
//	128 errSecUserCanceled          (-128):   the prompt was cancelled
//	37  errSecNoDefaultKeychain     (-25307)
//	50  errSecNoSuchKeychain        (-25294)
//
// In a GUI session a locked Keychain puts up its unlock dialog and the tool
// waits for the person, so a call that times out is most likely that
// prompt. Set writes "add-generic-password ... -w go-keyring-base64:<value>"
// to `security -i` and refuses a command over 4096 bytes with
// keyring.ErrSetDataTooBig, after starting the tool and without waiting for
// it; maxValueLen keeps every value under that limit so that never happens.
// Get decodes what it reads, and a decoding error quotes a byte of it.

const (
	msgLocked      = "Keychain is locked: unlock it and retry"
	msgUnavailable = "the macOS Keychain cannot be reached (/usr/bin/security did not run): check that you are logged in to a macOS session, then retry"
	msgNoKeychain  = "there is no default Keychain: open Keychain Access, create or choose a login keychain, then retry"
)

// maxValueLen is the largest value go-keyring can pass to `security -i`
// for this service and name (see keychainMaxValueLen).
func maxValueLen(service, name string) int { return keychainMaxValueLen(service, name) }

func precheck() error { return nil }

func classify(ctx context.Context, err error, timedOut bool, timeout time.Duration) classification {
	locked := classification{kind: ErrLocked, msg: msgLocked}
	var (
		exitErr *exec.ExitError
		hexErr  hex.InvalidByteError
		b64Err  base64.CorruptInputError
	)
	switch {
	case errors.Is(err, keyring.ErrNotFound):
		return classification{kind: ErrNotFound}
	case errors.Is(err, keyring.ErrSetDataTooBig):
		return classification{kind: ErrBadValue, msg: "the value is too large for the Keychain"}
	case timedOut:
		return locked
	case errors.As(err, &hexErr), errors.As(err, &b64Err), errors.Is(err, hex.ErrLength):
		return classification{msg: "the Keychain item is not in the form Sandbar writes: set it again with `sandbar secrets set`", hideCause: true}
	case errors.As(err, &exitErr):
		switch code := exitErr.ExitCode(); code {
		case 36, 29, 51, 128:
			return locked
		case 37, 50:
			return classification{kind: ErrUnavailable, msg: msgNoKeychain}
		default:
			return classification{msg: "the Keychain refused (security exited with status " + strconv.Itoa(code) + "): check the login keychain in Keychain Access, then retry"}
		}
	}
	// exec could not start /usr/bin/security at all.
	return classification{kind: ErrUnavailable, msg: msgUnavailable}
}
