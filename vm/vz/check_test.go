package vz

import "testing"

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
