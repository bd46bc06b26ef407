package image

import (
	"strings"
	"testing"
)

func TestDpkgDatabase(t *testing.T) {
	controls := []map[string]string{
		{"Package": "zlib1g", "Version": "1:1.2.13", "Architecture": "amd64", "Multi-Arch": "same",
			"Description": "compression library\nzlib is a library.\n\nSecond paragraph.", "Depends": "libc6 (>= 2.14)", "X-Custom": "x"},
		{"Package": "bash", "Version": "5.2.15-2", "Architecture": "amd64", "Essential": "yes", "Priority": "required"},
	}
	lists := [][]string{{"/.", "/usr", "/usr/lib/libz.so.1"}, {"/.", "/bin", "/bin/bash"}}
	es, err := dpkgDatabase(controls, lists)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range es {
		files[e.name] = string(e.data)
	}
	want := "Package: bash\nStatus: install ok installed\nEssential: yes\nPriority: required\nArchitecture: amd64\nVersion: 5.2.15-2\n\n" +
		"Package: zlib1g\nStatus: install ok installed\nArchitecture: amd64\nMulti-Arch: same\nVersion: 1:1.2.13\nDepends: libc6 (>= 2.14)\n" +
		"Description: compression library\n zlib is a library.\n .\n Second paragraph.\nX-Custom: x\n\n"
	if got := files["var/lib/dpkg/status"]; got != want {
		t.Errorf("status:\n%s\nwant:\n%s", got, want)
	}
	if got := files["var/lib/dpkg/info/bash.list"]; got != "/.\n/bin\n/bin/bash\n" {
		t.Errorf("bash.list = %q", got)
	}
	// Multi-Arch: same packages are listed by name and architecture.
	if got := files["var/lib/dpkg/info/zlib1g:amd64.list"]; got != "/.\n/usr\n/usr/lib/libz.so.1\n" {
		t.Errorf("zlib1g:amd64.list = %q", got)
	}
	if files["var/lib/dpkg/info/format"] != "1\n" {
		t.Errorf("info/format = %q, want the multiarch layout", files["var/lib/dpkg/info/format"])
	}
	for _, f := range []string{"var/lib/dpkg/available", "var/lib/dpkg/diversions", "var/lib/dpkg/statoverride"} {
		if _, ok := files[f]; !ok {
			t.Errorf("no %s", f)
		}
	}
	if _, err := dpkgDatabase([]map[string]string{{"Package": "x"}}, [][]string{nil}); err == nil {
		t.Error("a control file without a version was accepted")
	}
	if _, err := dpkgDatabase(controls, lists[:1]); err == nil {
		t.Error("mismatched lists were accepted")
	}
}

func TestAptSources(t *testing.T) {
	for _, tt := range []struct{ mirror, want string }{
		{"", "URIs: http://deb.debian.org/debian\n"},
		{DefaultMirror, "URIs: http://deb.debian.org/debian\n"},
		{"https://mirror.example/debian/", "URIs: https://mirror.example/debian\n"},
	} {
		var sources string
		for _, e := range aptFiles(tt.mirror) {
			if e.name == "etc/apt/sources.list.d/debian.sources" {
				sources = string(e.data)
			}
		}
		if !strings.Contains(sources, tt.want) || !strings.Contains(sources, "Suites: "+Suite+" "+Suite+"-updates\n") ||
			!strings.Contains(sources, "Suites: "+Suite+"-security\n") {
			t.Errorf("mirror %q: sources\n%s", tt.mirror, sources)
		}
	}
}

func TestDpkgConffiles(t *testing.T) {
	controls := []map[string]string{{"Package": "sudo", "Version": "1.9", "Architecture": "amd64"}}
	members := []map[string][]byte{{
		"md5sums":   []byte("0123  etc/sudoers\n4567  usr/bin/sudo\n"),
		"conffiles": []byte("/etc/sudoers\n/etc/pam.d/sudo\nremove-on-upgrade /etc/old\n"),
	}}
	es, err := dpkgDatabaseWith(controls, [][]string{{"/."}}, members)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range es {
		files[e.name] = string(e.data)
	}
	if !strings.Contains(files["var/lib/dpkg/status"], "Conffiles:\n /etc/sudoers 0123\n /etc/pam.d/sudo newconffile\nDescription") &&
		!strings.Contains(files["var/lib/dpkg/status"], "Conffiles:\n /etc/sudoers 0123\n /etc/pam.d/sudo newconffile\n\n") {
		t.Errorf("status:\n%s", files["var/lib/dpkg/status"])
	}
	if files["var/lib/dpkg/info/sudo.md5sums"] != "0123  etc/sudoers\n4567  usr/bin/sudo\n" {
		t.Errorf("md5sums = %q", files["var/lib/dpkg/info/sudo.md5sums"])
	}
}
