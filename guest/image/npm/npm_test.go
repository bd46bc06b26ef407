package npm

import "testing"

func TestTarballURL(t *testing.T) {
	tests := []struct {
		registry, name, version string
		want                    string
		wantErr                 bool
	}{
		{"", "left-pad", "1.3.0", "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz", false},
		{"", "@anthropic-ai/claude-code-linux-x64", "2.1.330",
			"https://registry.npmjs.org/@anthropic-ai/claude-code-linux-x64/-/claude-code-linux-x64-2.1.330.tgz", false},
		{"http://127.0.0.1:8080/", "@s/p", "1.0.0-beta.1", "http://127.0.0.1:8080/@s/p/-/p-1.0.0-beta.1.tgz", false},
		{"", "@scope", "1.0.0", "", true},
		{"", "../etc", "1.0.0", "", true},
		{"", "@s/../x", "1.0.0", "", true},
		{"", "Upper", "1.0.0", "", true},
		{"", "", "1.0.0", "", true},
		{"", "ok", "", "", true},
		{"", "ok", "1.0/../2", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name+"@"+tt.version, func(t *testing.T) {
			got, err := TarballURL(tt.registry, tt.name, tt.version)
			if (err != nil) != tt.wantErr {
				t.Fatalf("TarballURL(%q, %q, %q) error = %v, wantErr %v", tt.registry, tt.name, tt.version, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("TarballURL(%q, %q, %q) = %q, want %q", tt.registry, tt.name, tt.version, got, tt.want)
			}
		})
	}
}
