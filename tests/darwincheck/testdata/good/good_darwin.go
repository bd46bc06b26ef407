//go:build darwin

package good

import "github.com/Code-Hex/vz/v3"

// Configure builds a VM configuration the way vm/vz does.
func Configure(kernel string) (*vz.VirtualMachineConfiguration, error) {
	bl, err := vz.NewLinuxBootLoader(kernel, vz.WithCommandLine("console=hvc0"))
	if err != nil {
		return nil, err
	}
	return vz.NewVirtualMachineConfiguration(bl, 2, 2<<30)
}
