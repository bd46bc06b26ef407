package workspace

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Object is what a commit holds at a path: its git id and type ("blob",
// "tree"), and for a blob, its content when asked for.
type Object struct {
	ID, Type string
	Size     int64
	Data     []byte
}

// ObjectAt looks up path ("" or "." for the root) in commit, in Sandbar's
// repository of the project (never the person's): a build reads its
// Dockerfile, and keys its cache by the context's tree, from here. A
// blob's content is read when it is at most maxData bytes; a bigger one
// is an error naming the limit. A path the commit lacks is an error
// saying so.
func (m *Mirror) ObjectAt(ctx context.Context, commit, path string, maxData int64) (Object, error) {
	path = strings.Trim(path, "/")
	if path == "." {
		path = ""
	}
	if strings.ContainsAny(path, "\n\x00") || strings.HasPrefix(commit, "-") || commit == "" {
		return Object{}, fmt.Errorf("look up %q at %s: not a path git can name", path, commit)
	}
	spec := commit + ":" + path
	out, err := gitInput(ctx, m.Dir, strings.NewReader(spec+"\n"), "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
	if err != nil {
		return Object{}, fmt.Errorf("look up %s: %w", spec, err)
	}
	f := strings.Fields(strings.TrimSpace(out))
	if len(f) != 3 {
		return Object{}, fmt.Errorf("commit %s has no %s", short(commit), path)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return Object{}, fmt.Errorf("look up %s: %q", spec, out)
	}
	o := Object{ID: f[0], Type: f[1], Size: size}
	if o.Type != "blob" || maxData <= 0 {
		return o, nil
	}
	if size > maxData {
		return o, fmt.Errorf("%s is %d bytes, over the %d Sandbar reads", path, size, maxData)
	}
	data, err := git(ctx, m.Dir, "cat-file", "blob", o.ID)
	if err != nil {
		return o, fmt.Errorf("read %s: %w", spec, err)
	}
	o.Data = []byte(data)
	return o, nil
}
