package vz

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MinMacOS is the oldest macOS Sandbar runs on, the one number both the
// backend's check and the app bundle's LSMinimumSystemVersion
// (packaging/Info.plist.extra, held to it by packaging's test) follow.
// macOS 12 has virtio-fs and the disk caching modes, but its Linux boot
// loader hangs on Debian's 6.1 kernel (vfkit#11), and the network
// attachment's MTU needs 13.
const MinMacOS = 13

// EntitlementKey is what a binary must be signed with to create VMs.
const EntitlementKey = "com.apple.security.virtualization"

// signHint is what a person does about a missing entitlement.
const signHint = "sign the binary: run `make build` (it signs with packaging/sandbar.entitlements)"

// macOSMajor parses kern.osproductversion ("14.4.1") into its major number.
func macOSMajor(v string) (int, error) {
	major, _, _ := strings.Cut(strings.TrimSpace(v), ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0, errors.New("unrecognised macOS version " + strconv.Quote(v))
	}
	return n, nil
}

// versionProblem says why macOS ver (kern.osproductversion) cannot run
// Sandbar's VMs, or "" when it can.
func versionProblem(ver string) string {
	major, err := macOSMajor(ver)
	if err != nil {
		return err.Error()
	}
	if major < MinMacOS {
		return fmt.Sprintf("Sandbar's VMs need macOS %d or later and this Mac runs %s (older boot loaders hang on the guest's kernel): update macOS, or use the qemu backend", MinMacOS, strings.TrimSpace(ver))
	}
	return ""
}

// entitled reports whether plist (the XML `codesign -d --entitlements -
// --xml` prints) grants key the value true.
func entitled(plist []byte, key string) bool {
	d := xml.NewDecoder(bytes.NewReader(plist))
	lastKey, inKey := "", false
	for {
		tok, err := d.Token()
		if err != nil { // io.EOF or malformed: not entitled either way
			return false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "key":
				inKey, lastKey = true, ""
			case "true":
				if lastKey == key {
					return true
				}
				lastKey = ""
			case "dict", "plist":
			default:
				lastKey = ""
			}
		case xml.CharData:
			if inKey {
				lastKey += string(t)
			}
		case xml.EndElement:
			if t.Name.Local == "key" {
				inKey = false
			}
		}
	}
}
