package hosttrust

import "context"

// Where Linux keeps its trust: certificates a person or an administrator
// added (Debian's update-ca-certificates, Fedora's update-ca-trust), the
// system bundle Debian's tool writes, and the ca-certificates package's
// own certificates, which every VM's Debian bundle has already.
func linuxPlaces() places {
	return places{
		local: []localDir{
			{"/usr/local/share/ca-certificates", []string{".crt"}},
			{"/etc/pki/ca-trust/source/anchors", []string{".crt", ".pem", ".cer"}},
		},
		bundle: "/etc/ssl/certs/ca-certificates.crt",
		pkg:    "/usr/share/ca-certificates",
	}
}

func platform(ctx context.Context, c *collector) error {
	return linuxPlaces().collect(ctx, c)
}
