//go:build darwin

package magic

import "github.com/Code-Hex/vz/v3"

// Boot calls a boot loader that vz does not have.
func Boot() (vz.BootLoader, error) {
	return vz.NewMagicBootLoader()
}
