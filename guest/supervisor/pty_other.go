//go:build !linux

package supervisor

import (
	"errors"
	"os"
)

var errNoPTY = errors.New("pseudo-terminals are served on Linux only")

// openPTY is Linux-only: the supervisor runs in a Linux guest, this file
// keeps the package compiling elsewhere.
func openPTY(User) (master, slave *os.File, err error) { return nil, nil, errNoPTY }

func setWinSize(*os.File, int, int) error { return errNoPTY }
