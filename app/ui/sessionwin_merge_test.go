package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/widget"

	"sandbar/app/workspace"
)

func TestMergeMessage(t *testing.T) {
	for _, c := range []struct {
		name string
		res  workspace.MergeResult
		want []string
		imp  widget.Importance
	}{
		{"created", workspace.MergeResult{Created: true, Commit: "0123456789abcdef"},
			[]string{"Merged: branch sandbar/x created in /r at 0123456.", "working tree is untouched"}, widget.SuccessImportance},
		{"moved", workspace.MergeResult{Updated: true, Previous: "aaaaaaaaaaaa", Commit: "bbbbbbbbbbbb"},
			[]string{"moved from aaaaaaa to bbbbbbb."}, widget.SuccessImportance},
		{"submodules", workspace.MergeResult{Created: true, Commit: "0123456789abcdef", Submodules: []string{"libs/core", "libs/core/deep"}},
			[]string{"commits in submodules libs/core, libs/core/deep are in the repository's copies too, as branch sandbar/x"}, widget.SuccessImportance},
		{"skipped submodule", workspace.MergeResult{Created: true, Commit: "0123456789abcdef", SkippedSubmodules: []string{"out/vendor: not a submodule of /r"}},
			[]string{"Not brought into the repository's copies", "out/vendor: not a submodule of /r"}, widget.SuccessImportance},
		{"uncommitted", workspace.MergeResult{Commit: "0123456789abcdef", Uncommitted: []string{"a.go"}},
			[]string{"Already merged", "1 file was not committed in the session, so not merged: a.go"}, widget.WarningImportance},
	} {
		got := mergeMessage("sandbar/x", "/r", c.res)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: message %q lacks %q", c.name, got, w)
			}
		}
		if imp := mergeImportance(c.res); imp != c.imp {
			t.Errorf("%s: importance %v, want %v", c.name, imp, c.imp)
		}
	}
}
