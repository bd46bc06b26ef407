package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// lfsPointers lists the files of the clone at dir that Git LFS manages
// (attribute filter=lfs): Clone checks them out as their pointer files,
// since it runs no filter. It looks only when some .gitattributes names
// the lfs filter, so repositories without LFS pay one ls-files.
func lfsPointers(ctx context.Context, dir string) ([]string, error) {
	attrs, err := git(ctx, dir, "ls-files", "-z", "--", "*.gitattributes")
	if err != nil {
		return nil, fmt.Errorf("list .gitattributes in %s: %w", dir, err)
	}
	uses := false
	for _, p := range splitZ(attrs) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err == nil && strings.Contains(string(b), "filter=lfs") {
			uses = true
			break
		}
	}
	if !uses {
		return nil, nil
	}
	files, err := git(ctx, dir, "ls-files", "-z")
	if err != nil {
		return nil, fmt.Errorf("list files in %s: %w", dir, err)
	}
	out, err := gitInput(ctx, dir, strings.NewReader(files), "check-attr", "-z", "--stdin", "filter")
	if err != nil {
		return nil, fmt.Errorf("read attributes in %s: %w", dir, err)
	}
	var lfs []string
	recs := splitZ(out)
	for i := 0; i+2 < len(recs); i += 3 {
		if recs[i+2] == "lfs" {
			lfs = append(lfs, recs[i])
		}
	}
	return lfs, nil
}
