package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Branches are the local branches of a person's repository, for a picker
// of where a session starts.
type Branches struct {
	// Current is the checked-out branch, "" when HEAD is detached.
	Current string `json:"current,omitempty"`
	// Names are every local branch, the most recently committed to first.
	Names []string `json:"names,omitempty"`
}

// maxBranchList bounds what ListBranches reads of a repository's branch
// list: a picker of more than a few thousand names is no picker.
const maxBranchList = 1 << 20

// ListBranches lists the local branches of the repository whose work tree
// is root, with git's scrubbed environment and none of the repository's
// hooks or fsmonitor (see command): reading the list runs nothing the
// repository configures. A list past maxBranchList is cut at the last
// whole name.
func ListBranches(ctx context.Context, root string) (Branches, error) {
	var b Branches
	out, err := gitMax(ctx, root, nil, nil, maxBranchList, "for-each-ref", "--sort=-committerdate", "--format=%(refname)", "refs/heads/")
	if err != nil && !errors.Is(err, ErrOutputTooLarge) {
		return b, fmt.Errorf("list the branches of %s: %s", root, gitMessage(err))
	}
	if err != nil {
		// Cut: the last line may be a part of a name.
		if i := strings.LastIndexByte(out, '\n'); i >= 0 {
			out = out[:i]
		} else {
			out = ""
		}
	}
	for _, line := range strings.Split(out, "\n") {
		// Git refuses control characters in ref names, so a line is one
		// whole name.
		if name, ok := strings.CutPrefix(line, "refs/heads/"); ok && name != "" {
			b.Names = append(b.Names, name)
		}
	}
	cur, err := gitLine(ctx, root, "symbolic-ref", "-q", "HEAD")
	if err != nil && ctx.Err() != nil {
		return b, err
	}
	b.Current, _ = strings.CutPrefix(cur, "refs/heads/")
	return b, nil
}
