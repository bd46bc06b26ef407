package packaging

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The bundle can only be built on a Mac, but package-macos.sh's own work
// can be run anywhere against stand-ins for the Mac's tools: `fyne
// package` writes an Info.plist as fyne does, plutil edits it (the subset
// of plutil the script uses), codesign records what it signed with. The
// bundle that comes out must hold the merged keys and be signed with
// exactly the virtualization entitlement.

// fakeTools is the environment variable that turns this test binary into
// the stand-in tool its name (os.Args[0]) says.
const fakeTools = "SANDBAR_FAKE_MAC_TOOLS"

func TestMain(m *testing.M) {
	if os.Getenv(fakeTools) != "" {
		os.Exit(fakeTool(filepath.Base(os.Args[0]), os.Args[1:]))
	}
	os.Exit(m.Run())
}

func TestPackageMacOSMerge(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("on a Mac, `make package` builds the real bundle")
	}
	// The script works from its own folder's parent: a copy of it.
	root := t.TempDir()
	dir := filepath.Join(root, "packaging")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package-macos.sh", "codesign.sh", "Info.plist.extra", "sandbar.entitlements"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"uname", "make", "fyne", "plutil", "codesign"} {
		if err := os.Symlink(self, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(dir, "package-macos.sh"), "dist")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), fakeTools+"=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_APP_ID="+fyneAppID(t),
		// A stand-in built with -race would otherwise wait a second as it exits.
		"GORACE=atexit_sleep_ms=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("package-macos.sh: %v\n%s", err, out)
	}

	app := filepath.Join(root, "dist", "Sandbar.app")
	got := readPlist(t, filepath.Join(app, "Contents", "Info.plist"))
	extra := readPlist(t, "Info.plist.extra")
	for k, v := range extra {
		if got[k] != v {
			t.Errorf("the bundle's %s = %q, want Info.plist.extra's %q", k, got[k], v)
		}
	}
	typed, err := readFakePlist(filepath.Join(app, "Contents", "Info.plist"))
	if err != nil {
		t.Fatal(err)
	}
	if e := typed.get("LSUIElement"); e == nil || e.kind != "true" {
		t.Errorf("the bundle's LSUIElement is %+v, want the boolean true (a string is not a menu-bar app)", e)
	}
	if got["CFBundleIdentifier"] != fyneAppID(t) {
		t.Errorf("the bundle's CFBundleIdentifier = %q, want FyneApp.toml's ID %q", got["CFBundleIdentifier"], fyneAppID(t))
	}
	if got["CFBundleExecutable"] != "sandbar" {
		t.Errorf("the merge lost fyne's own keys: %v", got)
	}
	signed := readPlist(t, filepath.Join(app, "signed-entitlements"))
	if want := map[string]string{"com.apple.security.virtualization": "true"}; fmt.Sprint(signed) != fmt.Sprint(want) {
		t.Errorf("the bundle was signed with %v, want exactly %v", signed, want)
	}
}

// fakeTool is the stand-in for tool, with its exit status.
func fakeTool(tool string, args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "fake %s: "+format+"\n", append([]any{tool}, a...)...)
		return 2
	}
	switch tool {
	case "uname":
		fmt.Println("Darwin")
	case "make":
		if !slices.Equal(args, []string{"init"}) {
			return fail("unexpected arguments %q", args)
		}
	case "fyne":
		// What `fyne package --os darwin` leaves in the current folder.
		if !slices.Contains(args, "package") {
			return fail("unexpected arguments %q", args)
		}
		contents := filepath.Join("Sandbar.app", "Contents")
		if err := os.MkdirAll(filepath.Join(contents, "MacOS"), 0o755); err != nil {
			return fail("%v", err)
		}
		p := plist{
			{"CFBundleName", "string", "Sandbar"},
			{"CFBundleExecutable", "string", "sandbar"},
			{"CFBundleIdentifier", "string", os.Getenv("FAKE_APP_ID")},
			{"CFBundleShortVersionString", "string", "0.1.0"},
			{"NSHighResolutionCapable", "true", ""},
			{"LSMinimumSystemVersion", "string", "10.11"},
		}
		if err := p.write(filepath.Join(contents, "Info.plist")); err != nil {
			return fail("%v", err)
		}
	case "plutil":
		return fakePlutil(args, fail)
	case "codesign":
		// codesign --force --sign - --entitlements FILE TARGET, then
		// codesign -d --entitlements - --xml TARGET to read it back.
		target := args[len(args)-1]
		if i := slices.Index(args, "--entitlements"); i >= 0 && args[i+1] != "-" {
			b, err := os.ReadFile(args[i+1])
			if err != nil {
				return fail("%v", err)
			}
			if err := os.WriteFile(filepath.Join(target, "signed-entitlements"), b, 0o644); err != nil {
				return fail("%v", err)
			}
			return 0
		}
		b, err := os.ReadFile(filepath.Join(target, "signed-entitlements"))
		if err != nil {
			return fail("%s is not signed", target)
		}
		os.Stdout.Write(b)
	default:
		return fail("no such stand-in")
	}
	return 0
}

// fakePlutil does what package-macos.sh asks of plutil: -extract KEY raw
// -o - FILE, -replace KEY -string|-bool VALUE FILE, -lint FILE.
func fakePlutil(args []string, fail func(string, ...any) int) int {
	switch {
	case len(args) == 6 && args[0] == "-extract" && args[2] == "raw" && args[3] == "-o" && args[4] == "-":
		p, err := readFakePlist(args[5])
		if err != nil {
			return fail("%v", err)
		}
		e := p.get(args[1])
		switch {
		case e == nil:
			return fail("no %s in %s", args[1], args[5])
		case e.kind == "string":
			fmt.Println(e.value)
		default:
			fmt.Println(e.kind)
		}
	case len(args) == 5 && args[0] == "-replace":
		p, err := readFakePlist(args[4])
		if err != nil {
			return fail("%v", err)
		}
		e := entry{key: args[1]}
		switch args[2] {
		case "-string":
			e.kind, e.value = "string", args[3]
		case "-bool":
			switch args[3] {
			case "YES", "true":
				e.kind = "true"
			case "NO", "false":
				e.kind = "false"
			default:
				return fail("-bool %q", args[3])
			}
		default:
			return fail("type %s", args[2])
		}
		if old := p.get(e.key); old != nil {
			*old = e
		} else {
			p = append(p, e)
		}
		if err := p.write(args[4]); err != nil {
			return fail("%v", err)
		}
	case len(args) == 2 && args[0] == "-lint":
		if _, err := readFakePlist(args[1]); err != nil {
			return fail("%v", err)
		}
		fmt.Println(args[1] + ": OK")
	default:
		return fail("unexpected arguments %q", args)
	}
	return 0
}

// plist is a property list whose top level is a dict of scalars, in
// order.
type plist []entry

type entry struct {
	key, kind, value string // kind: string, true or false
}

func (p plist) get(key string) *entry {
	for i := range p {
		if p[i].key == key {
			return &p[i]
		}
	}
	return nil
}

func (p plist) write(path string) error {
	var b strings.Builder
	b.WriteString(xml.Header + `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n<plist version=\"1.0\">\n<dict>\n")
	for _, e := range p {
		b.WriteString("\t<key>")
		xml.EscapeText(&b, []byte(e.key))
		b.WriteString("</key>\n\t")
		if e.kind == "string" {
			b.WriteString("<string>")
			xml.EscapeText(&b, []byte(e.value))
			b.WriteString("</string>\n")
		} else {
			b.WriteString("<" + e.kind + "/>\n")
		}
	}
	b.WriteString("</dict>\n</plist>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func readFakePlist(path string) (plist, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	var p plist
	var key, text string
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			text = ""
			if depth == 3 && (t.Name.Local == "true" || t.Name.Local == "false") {
				p = append(p, entry{key: key, kind: t.Name.Local})
			}
		case xml.CharData:
			text += string(t)
		case xml.EndElement:
			depth--
			switch t.Name.Local {
			case "key":
				key = text
			case "string":
				if depth == 2 {
					p = append(p, entry{key: key, kind: "string", value: text})
				}
			}
		}
	}
}
