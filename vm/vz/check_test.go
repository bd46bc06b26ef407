package vz

import (
	"strings"
	"testing"
)

func TestMacOSMajor(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"14.4.1", 14, false},
		{"12.0\n", 12, false},
		{"11", 11, false},
		{"", 0, true},
		{"Sonoma", 0, true},
	}
	for _, tc := range tests {
		got, err := macOSMajor(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("macOSMajor(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestVersionProblem(t *testing.T) {
	tests := []struct {
		ver  string
		want string // substring; "" means no problem
	}{
		{"13.0", ""},
		{"14.4.1\n", ""},
		{"26.0", ""},
		// 12 has the APIs, but its boot loader hangs on Debian's 6.1 kernel.
		{"12.7.4", "need macOS 13 or later and this Mac runs 12.7.4"},
		{"11.2", "need macOS 13"},
		{"Ventura", "unrecognised macOS version"},
	}
	for _, tc := range tests {
		got := versionProblem(tc.ver)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("versionProblem(%q) = %q, want %q", tc.ver, got, tc.want)
		}
	}
}

func TestEntitled(t *testing.T) {
	const head = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>`
	tests := []struct {
		name, plist string
		want        bool
	}{
		{"granted", head + `<key>com.apple.security.virtualization</key><true/></dict></plist>`, true},
		{"granted among others", head + `<key>com.apple.security.network.client</key><true/>
			<key>com.apple.security.virtualization</key>
			<true/></dict></plist>`, true},
		{"false", head + `<key>com.apple.security.virtualization</key><false/></dict></plist>`, false},
		{"other key true", head + `<key>com.apple.security.virtualization</key><false/><key>x</key><true/></dict></plist>`, false},
		{"unsigned: empty output", "", false},
		{"garbage", "Executable=/usr/local/bin/sandbar\n\xfa\xde\x71\x71", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := entitled([]byte(tc.plist), EntitlementKey); got != tc.want {
				t.Errorf("entitled = %v, want %v", got, tc.want)
			}
		})
	}
}
