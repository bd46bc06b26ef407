package vz

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strconv"
	"strings"
)

// minMacOS is the oldest macOS the backend runs on: virtio-fs and the
// disk caching modes it asks for arrived in macOS 12.
const minMacOS = 12

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
