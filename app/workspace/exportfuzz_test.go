package workspace

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The export's promise, tested over generated trees: whatever it writes
// resolves inside it. Each tree is written by the exportWriter into a
// real folder, in both ways of comparing names, and every path in the
// export is then resolved: by the operating system (filepath.EvalSymlinks;
// this is Linux, so byte-compared names), and by resolveFolded below, a
// lookup written apart from the export's own, that reads the tree on disk
// and compares names as macOS's filesystem does.

// exportSpec is a tree as git would hand it to the exporter: one entry a
// line, "name -> target" a symlink, "name/" a submodule's (empty) folder,
// anything else a file.
type exportSpec string

type specEntry struct{ name, target, kind string }

func (s exportSpec) entries() []specEntry {
	var es []specEntry
	for _, line := range strings.Split(string(s), "\n") {
		if line == "" {
			continue
		}
		if name, target, ok := strings.Cut(line, " -> "); ok {
			es = append(es, specEntry{name, target, "link"})
		} else if name, ok := strings.CutSuffix(line, "/"); ok {
			es = append(es, specEntry{name: name, kind: "dir"})
		} else {
			es = append(es, specEntry{name: line, kind: "file"})
		}
	}
	return es
}

// writeExportSpec writes spec into dir as an export does, comparing names
// folded or not.
func writeExportSpec(t testing.TB, dir string, spec exportSpec, fold bool) *exportWriter {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := newExportWriter(dir, fold)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	for _, e := range spec.entries() {
		switch e.kind {
		case "link":
			err = w.symlink(e.name, e.target)
		case "dir":
			err = w.dir(e.name)
		default:
			err = w.file(e.name, 0o644, 1, strings.NewReader("x"))
		}
		if err != nil {
			t.Fatalf("write %q: %v\ntree:\n%s", e.name, err, spec)
		}
	}
	if err := w.finish(); err != nil {
		t.Fatalf("finish: %v\ntree:\n%s", err, spec)
	}
	return w
}

// checkExportInside resolves every path of the export at dir and fails t
// where one leads out of it. With fold, names are compared as macOS does
// (resolveFolded), and no folder may hold two names that are one there.
func checkExportInside(t testing.TB, dir string, spec exportSpec, fold bool) {
	t.Helper()
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := newExportNames(fold)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			checkNoTwins(t, p, names, spec)
		}
		if rel == "." {
			return nil
		}
		if !fold {
			if got, err := filepath.EvalSymlinks(p); err == nil {
				if r, _ := filepath.Rel(root, got); r == ".." || strings.HasPrefix(r, "../") {
					t.Errorf("fold=%v: %s resolves to %s, outside the export\ntree:\n%s", fold, rel, got, spec)
				}
			}
		}
		if where := resolveFolded(root, rel, names); where != "" {
			t.Errorf("fold=%v: %s leads out of the export: %s\ntree:\n%s", fold, rel, where, spec)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkNoTwins(t testing.TB, dir string, names exportNames, spec exportSpec) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, e := range ents {
		k := names.key(e.Name())
		if other, ok := seen[k]; ok {
			t.Errorf("fold=%v: %s holds %q and %q, one name there\ntree:\n%s", names.fold, dir, other, e.Name(), spec)
		}
		seen[k] = e.Name()
	}
}

// resolveFolded looks rel up in the tree on disk at root as a kernel
// does, comparing names with names, and says how it leaves root ("" when
// it stays inside, or fails, as a lookup of something missing does). It
// reads the folders and symlinks themselves; it shares nothing with the
// export's judgement but the comparison of names.
func resolveFolded(root, rel string, names exportNames) string {
	hops := 0
	var walk func(cur []string, p string) ([]string, string, bool)
	// walk returns where p leads from cur, how it left root, and
	// whether the lookup found everything it needed.
	walk = func(cur []string, p string) ([]string, string, bool) {
		if strings.HasPrefix(p, "/") {
			return nil, "an absolute path " + p, false
		}
		parts := strings.Split(p, "/")
		for i, c := range parts {
			switch c {
			case "", ".":
				continue
			case "..":
				if len(cur) == 0 {
					return nil, "a .. above the root", false
				}
				cur = cur[:len(cur)-1]
				continue
			}
			here := filepath.Join(append([]string{root}, cur...)...)
			ents, err := os.ReadDir(here)
			if err != nil {
				return nil, "", false // not a folder: the lookup fails
			}
			var found []fs.DirEntry
			for _, e := range ents {
				if names.key(e.Name()) == names.key(c) {
					found = append(found, e)
				}
			}
			if len(found) != 1 {
				return nil, "", false // none: fails; twins: checkNoTwins says so
			}
			e := found[0]
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				hops++
				if hops > 40 {
					return nil, "", false
				}
				target, err := os.Readlink(filepath.Join(here, e.Name()))
				if err != nil {
					return nil, "", false
				}
				next, out, ok := walk(cur, target)
				if out != "" || !ok {
					return nil, out, ok
				}
				cur = next
			case e.IsDir():
				cur = append(cur, e.Name())
			default:
				if i < len(parts)-1 {
					return nil, "", false // a file with more to follow
				}
				cur = append(cur, e.Name())
			}
		}
		return cur, "", true
	}
	_, out, _ := walk(nil, rel)
	return out
}

// exportCase writes spec in both ways of comparing names and checks it.
func exportCase(t testing.TB, base string, spec exportSpec) {
	t.Helper()
	for _, fold := range []bool{false, true} {
		dir := filepath.Join(base, fmt.Sprintf("fold-%v", fold))
		writeExportSpec(t, dir, spec, fold)
		checkExportInside(t, dir, spec, fold)
		if err := RemoveExport(dir); err != nil {
			t.Fatal(err)
		}
	}
}

// issueCase is issue 21's: keyed by lower-cased name, a's target stood
// for A's, and x was judged to stay inside; export/x was the host's /.
const issueCase exportSpec = "A -> .\na -> d/d/d/d/d/d/d/d\nx -> A/../../../../../../../..\n"

func TestExportCaseTwinsStayInside(t *testing.T) {
	for _, fold := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "export")
		w := writeExportSpec(t, dir, issueCase, fold)
		checkExportInside(t, dir, issueCase, fold)
		if _, err := os.Lstat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
			t.Errorf("fold=%v: x was written (%v); it leads to the host's /", fold, err)
		}
		if got, err := os.Readlink(filepath.Join(dir, "A")); err != nil || got != "." {
			t.Errorf("fold=%v: A -> %q, %v; want it written (it leads to the export's root)", fold, got, err)
		}
		_, err := os.Lstat(filepath.Join(dir, "a"))
		switch {
		case !fold && err != nil:
			t.Errorf("a, a name of its own on Linux, was not written: %v (skipped: %q)", err, w.skipped)
		case fold && !os.IsNotExist(err):
			t.Errorf("a, the same name as A when case is folded, was written too (%v)", err)
		}
	}
}

// genNames are the parts generated names and targets are made of: case
// twins, NFC/NFD twins (é), a name that folds to another (ß, ss).
var genNames = []string{"a", "A", "b", "d", "D", "\u00e9", "e\u0301", "\u00c9", "ss", "\u00df"}

// genSpec makes a random tree: files, submodule folders and symlinks,
// whose targets are chains of names, "." and "..", sometimes absolute,
// pointing at each other, into each other and back up.
func genSpec(r *rand.Rand) exportSpec {
	part := func() string { return genNames[r.IntN(len(genNames))] }
	taken := map[string]string{} // path -> kind; folders as "dir"
	var lines []string
	n := 1 + r.IntN(10)
	var linkNames []string
	for range n {
		depth := 1 + r.IntN(3)
		if r.IntN(2) == 0 {
			depth = 1 // most at the top, where twins meet
		}
		var ps []string
		for range depth {
			ps = append(ps, part())
		}
		name := strings.Join(ps, "/")
		ok := taken[name] == ""
		for d := path.Dir(name); d != "." && ok; d = path.Dir(d) {
			ok = taken[d] == "" || taken[d] == "dir"
		}
		if !ok {
			continue
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			taken[d] = "dir"
		}
		switch k := r.IntN(10); {
		case k < 2:
			taken[name] = "file"
			lines = append(lines, name)
		case k < 3:
			taken[name] = "dir"
			lines = append(lines, name+"/")
		default:
			taken[name] = "link"
			var t []string
			switch k := r.IntN(20); {
			case k == 0:
				t = append(t, "") // absolute
			case k < 4:
				t = append(t, ".") // the folder it is in
			case k < 5:
				t = append(t, "..")
			case k < 10 && len(linkNames) > 0:
				// through another symlink, spelled as it is or
				// as a twin, then up
				l := linkNames[r.IntN(len(linkNames))]
				if r.IntN(2) == 0 {
					l = strings.ToUpper(l)
				}
				t = append(t, l)
				for range r.IntN(5) {
					t = append(t, "..")
				}
			}
			extra := r.IntN(6)
			if r.IntN(2) == 0 {
				extra = 0
			}
			for range extra {
				switch k := r.IntN(10); {
				case k < 3:
					t = append(t, "..")
				case k < 4:
					t = append(t, ".")
				default:
					t = append(t, part())
				}
			}
			if len(t) == 0 {
				t = append(t, part())
			}
			linkNames = append(linkNames, name)
			lines = append(lines, name+" -> "+strings.Join(t, "/"))
			// Its twin, a name of its own here and the same name on
			// macOS, leading elsewhere.
			if tw := twin(name); r.IntN(3) == 0 && taken[tw] == "" {
				taken[tw] = "link"
				lines = append(lines, tw+" -> "+strings.Repeat("d/", 1+r.IntN(4))+part())
			}
		}
	}
	sort.Strings(lines) // git's order is near enough: any order must hold
	return exportSpec(strings.Join(lines, "\n") + "\n")
}

// twin is name with its last part in the other case, or the other
// Unicode form.
func twin(name string) string {
	dir, last := path.Split(name)
	switch {
	case strings.Contains(last, "\u00e9"):
		last = strings.ReplaceAll(last, "\u00e9", "e\u0301")
	case strings.Contains(last, "e\u0301"):
		last = strings.ReplaceAll(last, "e\u0301", "\u00e9")
	case strings.ToUpper(last) != last:
		last = strings.ToUpper(last)
	default:
		last = strings.ToLower(last)
	}
	return dir + last
}

func TestExportSymlinkProperty(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	r := rand.New(rand.NewPCG(21, 2))
	base := t.TempDir()
	written, left := 0, 0
	for i := range n {
		spec := genSpec(r)
		for _, fold := range []bool{false, true} {
			dir := filepath.Join(base, fmt.Sprint(i, fold))
			w := writeExportSpec(t, dir, spec, fold)
			checkExportInside(t, dir, spec, fold)
			written += w.files
			left += len(w.skipped)
			if err := RemoveExport(dir); err != nil {
				t.Fatal(err)
			}
		}
		if t.Failed() {
			return
		}
	}
	// Both sides of the judgement were exercised, or the test says little.
	if written == 0 || left == 0 {
		t.Errorf("over %d trees: %d entries written, %d left out; want some of each", n, written, left)
	}
	t.Logf("%d trees: %d entries written, %d left out", n, written, left)
}

func FuzzExportSymlinks(f *testing.F) {
	for _, seed := range []exportSpec{
		issueCase,
		"A -> .\nb -> a/..\n",
		"\u00e9 -> .\ne\u0301 -> d/d\nx -> \u00e9/..\n",
		"d/l -> ../..\n",
		"d/l -> ..\nd/m -> l/..\n",
		"l1 -> l2/..\nl2 -> d/l3\nd/l3 -> ../..\n",
		"l -> /etc\n",
		"a/b -> ../c\nc -> a/b\n",
		"ss -> .\n\u00df/x -> ../..\n",
		"D/f\nd -> D/..\n",
		"s -> .\nt -> s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/s/..\n",
		"missing/../../x -> a\nm -> missing/../..\n",
	} {
		f.Add(string(seed))
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if len(spec) > 4096 {
			return
		}
		exportCase(t, t.TempDir(), exportSpec(spec))
	})
}
