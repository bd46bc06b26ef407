//go:build !linux && !darwin

package secrets

import (
	"context"
	"errors"
	"time"

	"github.com/zalando/go-keyring"
)

// Sandbar runs on macOS and Linux; elsewhere go-keyring's own keyring (the
// Windows Credential Manager, or none) is used with the plainest mapping.

func maxValueLen(service, name string) int { return MaxValueLen }

func precheck() error { return nil }

func classify(ctx context.Context, err error, timedOut bool, timeout time.Duration) classification {
	switch {
	case errors.Is(err, keyring.ErrNotFound):
		return classification{kind: ErrNotFound}
	case errors.Is(err, keyring.ErrSetDataTooBig):
		return classification{kind: ErrBadValue, msg: "the value is too large for the keyring"}
	case timedOut:
		return classification{kind: ErrUnavailable, msg: "the keyring did not answer within " + timeout.String() + ": retry"}
	}
	return classification{kind: ErrUnavailable, msg: "the keyring cannot be used here: retry, or check the system's credential store"}
}
