package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sandbar/vm/vz"
)

// readPlist parses an XML property list whose top level is a dict of
// scalars, returning each value as "true", "false" or its string.
func readPlist(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name `xml:"plist"`
		Dict    struct {
			Items []struct {
				XMLName xml.Name
				Text    string `xml:",chardata"`
			} `xml:",any"`
		} `xml:"dict"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s is not a valid plist: %v", path, err)
	}
	items := doc.Dict.Items
	if len(items)%2 != 0 {
		t.Fatalf("%s: dict has a key without a value", path)
	}
	out := map[string]string{}
	for i := 0; i < len(items); i += 2 {
		k, v := items[i], items[i+1]
		if k.XMLName.Local != "key" {
			t.Fatalf("%s: want <key> at item %d, got <%s>", path, i, k.XMLName.Local)
		}
		switch v.XMLName.Local {
		case "true", "false":
			out[k.Text] = v.XMLName.Local
		case "string":
			out[k.Text] = v.Text
		default:
			out[k.Text] = "<" + v.XMLName.Local + ">"
		}
	}
	return out
}

func TestEntitlements(t *testing.T) {
	got := readPlist(t, "sandbar.entitlements")
	want := map[string]string{"com.apple.security.virtualization": "true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entitlements = %v, want exactly %v (ask for nothing more than VMs need)", got, want)
	}
}

func TestInfoPlistExtra(t *testing.T) {
	got := readPlist(t, "Info.plist.extra")
	want := map[string]string{
		"LSUIElement":        "true",
		"CFBundleIdentifier": fyneAppID(t),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if got["NSHumanReadableCopyright"] == "" {
		t.Error("NSHumanReadableCopyright is missing")
	}
	if want["CFBundleIdentifier"] != "dev.sandbar.app" {
		t.Errorf("FyneApp.toml ID is %q, want dev.sandbar.app", want["CFBundleIdentifier"])
	}
	// package-macos.sh must merge every key the file holds.
	script, err := os.ReadFile("package-macos.sh")
	if err != nil {
		t.Fatal(err)
	}
	for k := range got {
		if !bytes.Contains(script, []byte(" "+k+"\n")) {
			t.Errorf("package-macos.sh does not merge %s", k)
		}
	}
}

// The bundle and the command line agree on the oldest macOS, one
// constant (vz.MinMacOS): the CLI's check must refuse nothing the bundle
// accepts (else a Mac that opens the app cannot run its VMs), and the
// bundle must not refuse a Mac the CLI serves.
func TestMinimumMacOS(t *testing.T) {
	got := readPlist(t, "Info.plist.extra")["LSMinimumSystemVersion"]
	if want := fmt.Sprintf("%d.0", vz.MinMacOS); got != want {
		t.Errorf("LSMinimumSystemVersion = %q, want %q (vz.MinMacOS): change both together", got, want)
	}
}

// fyneAppID reads [Details] ID from ../FyneApp.toml.
func fyneAppID(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "FyneApp.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && section == "[Details]" && strings.TrimSpace(k) == "ID" {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatal("FyneApp.toml has no [Details] ID")
	return ""
}

func TestDesktopEntry(t *testing.T) {
	data, err := os.ReadFile("sandbar.desktop")
	if err != nil {
		t.Fatal(err)
	}
	entry := map[string]string{}
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Desktop Entry]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Errorf("line %q is not key=value", line)
			}
			entry[k] = v
		}
	}
	want := map[string]string{"Type": "Application", "Name": "Sandbar", "Exec": "sandbar", "Icon": "sandbar"}
	for k, v := range want {
		if entry[k] != v {
			t.Errorf("%s = %q, want %q", k, entry[k], v)
		}
	}
	cats := entry["Categories"]
	if !strings.HasSuffix(cats, ";") || !strings.Contains(";"+cats, ";Development;") {
		t.Errorf("Categories = %q, want a ;-terminated list holding Development", cats)
	}
}

var scripts = []string{"codesign.sh", "go-test-exec.sh", "package-macos.sh", "package-linux.sh"}

func TestScriptsParse(t *testing.T) {
	for _, s := range scripts {
		fi, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable: chmod +x packaging/%s", s, s)
		}
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
}

func TestShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck is not installed (apt-get install shellcheck / brew install shellcheck)")
	}
	if out, err := exec.Command(sc, scripts...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// Off macOS the exec wrapper must only run the test binary, args intact,
// and codesign.sh must refuse with a reason.
func TestScriptsOffMacOS(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("checks the non-macOS path")
	}
	out, err := exec.Command("./go-test-exec.sh", "printf", "%s|", "-test.v", "a b").Output()
	if err != nil {
		t.Fatalf("go-test-exec.sh: %v", err)
	}
	if string(out) != "-test.v|a b|" {
		t.Errorf("go-test-exec.sh passed args as %q", out)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("./codesign.sh", bin)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Error("codesign.sh succeeded off macOS")
	}
	if !strings.Contains(stderr.String(), "only on macOS") {
		t.Errorf("codesign.sh said %q, want it to name macOS", stderr.String())
	}
	if err := exec.Command("./go-test-exec.sh").Run(); err == nil {
		t.Error("go-test-exec.sh without a binary succeeded")
	}
}

// The Linux tarball holds the binary, the desktop entry, the icon and the
// README under one folder laid out like a prefix, owned by root, and is
// the same bytes when built twice.
func TestPackageLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tarball is the Linux package")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sandbar")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho sandbar\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	build := func(out string) []byte {
		cmd := exec.Command("./package-linux.sh", bin, "1.2.3-4-gabc", "amd64", out)
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("package-linux.sh: %v\n%s", err, b)
		}
		data, err := os.ReadFile(filepath.Join(out, "sandbar-1.2.3-4-gabc-linux-amd64.tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	data := build(filepath.Join(dir, "a"))
	if again := build(filepath.Join(dir, "b")); !bytes.Equal(data, again) {
		t.Error("two builds of the same inputs differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, want root", h.Name, h.Uid, h.Gid)
		}
		if h.Typeflag == tar.TypeReg {
			files[h.Name] = h
		}
	}
	top := "sandbar-1.2.3-4-gabc-linux-amd64/"
	want := map[string]int64{
		top + "bin/sandbar":                                  0o755,
		top + "share/applications/sandbar.desktop":           0o644,
		top + "share/icons/hicolor/256x256/apps/sandbar.png": 0o644,
		top + "README.md":                                    0o644,
	}
	for name, mode := range want {
		h, ok := files[name]
		if !ok {
			t.Errorf("the tarball has no %s", name)
			continue
		}
		if h.Mode&0o777 != mode {
			t.Errorf("%s has mode %o, want %o", name, h.Mode&0o777, mode)
		}
	}
	if len(files) != len(want) {
		t.Errorf("the tarball holds %d files, want %d: %v", len(files), len(want), files)
	}

	if err := exec.Command("./package-linux.sh", filepath.Join(dir, "missing"), "1", "amd64", dir).Run(); err == nil {
		t.Error("package-linux.sh packaged a binary that does not exist")
	}
}
