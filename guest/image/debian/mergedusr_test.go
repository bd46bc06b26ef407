package debian

import "testing"

func TestMergedUsrPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"./bin/ls", "usr/bin/ls"},
		{"./bin/", "usr/bin"},
		{"./bin", "usr/bin"},
		{"./sbin/x", "usr/sbin/x"},
		{"./lib/x86_64-linux-gnu/libc.so.6", "usr/lib/x86_64-linux-gnu/libc.so.6"},
		{"./lib64/ld-linux-x86-64.so.2", "usr/lib64/ld-linux-x86-64.so.2"},
		{"./lib32/x", "usr/lib32/x"},
		{"./libx32/x", "usr/libx32/x"},
		{"/bin/sh", "usr/bin/sh"},
		{"bin/sh", "usr/bin/sh"},
		{"./usr/bin/ls", "usr/bin/ls"},
		{"./usr/lib/x/", "usr/lib/x"},
		{"./etc/passwd", "etc/passwd"},
		{"./binutils/x", "binutils/x"},
		{"./library", "library"},
		{"./", ""},
		{".", ""},
		{"/", ""},
		{"./../../etc/x", "etc/x"},
		{"./var//lib/./dpkg", "var/lib/dpkg"},
	}
	for _, tt := range tests {
		if got := MergedUsrPath(tt.in); got != tt.want {
			t.Errorf("MergedUsrPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMergedUsrLink(t *testing.T) {
	tests := []struct{ name, target, want string }{
		{"./usr/bin/sh", "/bin/dash", "/usr/bin/dash"},
		{"./usr/bin/sh", "dash", "dash"},
		{"./bin/sh", "dash", "dash"},
		{"./etc/alternatives/x", "/sbin/x", "/usr/sbin/x"},
		{"./usr/lib/x/y", "../../bin/z", "../../bin/z"},
		// Moved links keep reaching the same file.
		{"./bin/foo", "../usr/bin/bar", "bar"},
		{"./sbin/foo", "../usr/lib/x/foo", "../lib/x/foo"},
		{"./lib/x86_64-linux-gnu/libz.so.1", "libz.so.1.2.13", "libz.so.1.2.13"},
		{"./lib64/ld-linux-x86-64.so.2", "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"},
		{"./bin/up", "../etc/x", "../../etc/x"},
		{"./etc/x", "/etc/y", "/etc/y"},
	}
	for _, tt := range tests {
		if got := MergedUsrLink(tt.name, tt.target); got != tt.want {
			t.Errorf("MergedUsrLink(%q, %q) = %q, want %q", tt.name, tt.target, got, tt.want)
		}
	}
}
