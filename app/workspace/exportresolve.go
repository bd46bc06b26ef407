package workspace

import "strings"

// maxLinkHops is how many symlinks one lookup may follow here: macOS
// stops at 32 (MAXSYMLINKS), Linux at 40. A lookup that needs more fails
// on the host, and the export leaves out the symlink that needs it.
const maxLinkHops = 32

// exportTree is the symlinks of an export as they will be on disk, for
// judging where each one leads the way the host's filesystem will resolve
// it: part by part, following the export's own symlinks. It holds each
// symlink and the folders above it, by id (0 is the root), with names
// compared as exportNames does. Other folders and files need no record: a
// lookup treats a name that is not a symlink as a folder (see walk).
type exportTree struct {
	names  exportNames
	kids   map[childKey]int
	parent []int          // by id
	links  map[int]string // symlink id to target
	// verdict: each symlink's, once judged; out: symlinks left out
	// whatever they point at (the system refused to write them).
	verdict map[int]*linkVerdict
	out     map[int]bool
}

type childKey struct {
	parent int
	key    string
}

// missing stands for a name the tree does not hold in a lookup's path.
const missing = -1

// linkVerdict is where a symlink leads: inside the export (in), to the
// path to (ids from the root, missing for names not held), after hops
// symlinks in all.
type linkVerdict struct {
	judging bool
	in      bool
	to      []int
	hops    int
}

func newExportTree(names exportNames) *exportTree {
	return &exportTree{
		names: names, kids: map[childKey]int{}, parent: []int{0},
		links: map[int]string{}, verdict: map[int]*linkVerdict{}, out: map[int]bool{},
	}
}

// add records the symlink name (slash-separated) to target, returning its
// id.
func (t *exportTree) add(name, target string) int {
	id := 0
	for _, c := range strings.Split(name, "/") {
		k := childKey{id, t.names.key(c)}
		next, ok := t.kids[k]
		if !ok {
			next = len(t.parent)
			t.parent = append(t.parent, id)
			t.kids[k] = next
		}
		id = next
	}
	t.links[id] = target
	return id
}

// inside reports whether the symlink id stays inside the export.
func (t *exportTree) inside(id int) bool { return t.judge(id).in }

// judge decides where the symlink id leads, once. A symlink met again
// while it is being judged is a loop: the one that meets it is judged
// out, so every verdict rests only on verdicts already final. A symlink
// judged out is not written, so a lookup through it finds nothing there
// (see walk).
func (t *exportTree) judge(id int) *linkVerdict {
	if v, ok := t.verdict[id]; ok {
		return v
	}
	v := &linkVerdict{judging: true}
	t.verdict[id] = v
	if !t.out[id] {
		var dir []int
		for p := t.parent[id]; p != 0; p = t.parent[p] {
			dir = append(dir, p)
		}
		for i, j := 0, len(dir)-1; i < j; i, j = i+1, j-1 {
			dir[i], dir[j] = dir[j], dir[i]
		}
		v.to, v.hops, v.in = t.walk(dir, t.links[id])
		v.hops++
		if v.hops > maxLinkHops {
			v.in = false
		}
	}
	v.judging = false
	if !v.in {
		v.to = nil
	}
	return v
}

// walk resolves target from the folder dir (ids from the root) as the
// host would: part by part, a symlink replaced by where it leads, ".."
// going up from where the lookup has got to. It returns where that is,
// how many symlinks it followed, and false when it leaves the export: an
// absolute target, ".." above the root, a loop, too many symlinks.
//
// A part that names nothing in the tree, or names a file with more to
// follow, fails on the host; here the lookup goes on as if it were an
// empty folder. That only makes the judgement stricter, and it also
// covers tools that tidy a path ("a/missing/../b") before they open it.
func (t *exportTree) walk(dir []int, target string) ([]int, int, bool) {
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, '\\') {
		return nil, 0, false
	}
	cur := append([]int(nil), dir...)
	hops := 0
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, 0, false
			}
			cur = cur[:len(cur)-1]
			continue
		}
		at := 0
		if len(cur) > 0 {
			at = cur[len(cur)-1]
		}
		id, ok := missing, false
		if at != missing {
			id, ok = t.kids[childKey{at, t.names.key(c)}]
			if !ok {
				id = missing
			}
		}
		cur = append(cur, id)
		if _, link := t.links[id]; !ok || !link {
			continue
		}
		v := t.judge(id)
		if v.judging {
			return nil, 0, false
		}
		if !v.in {
			continue // not written: nothing there
		}
		hops += v.hops
		if hops > maxLinkHops {
			return nil, 0, false
		}
		cur = append(cur[:0:0], v.to...)
	}
	return cur, hops, true
}

// forget drops every verdict, for judging again after a symlink has been
// put out (t.out).
func (t *exportTree) forget() { t.verdict = map[int]*linkVerdict{} }
