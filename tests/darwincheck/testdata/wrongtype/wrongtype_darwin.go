//go:build darwin

package wrongtype

import "github.com/Code-Hex/vz/v3"

// Configure passes the CPU count as a string.
func Configure(bl vz.BootLoader) (*vz.VirtualMachineConfiguration, error) {
	return vz.NewVirtualMachineConfiguration(bl, "two", 2<<30)
}
