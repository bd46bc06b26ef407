package ui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWindowsRunNoGit: the windows never run git (nor open a session's
// files): what they show of a session's work comes through the
// session.Service, whose git runs in the VM or with app/workspace's
// scrubbed environment. A git command started here, with whatever
// environment the app inherited, would bypass both.
func TestWindowsRunNoGit(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("widget", "*.go"))
	files = append(files, more...)
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && (s == "git" || strings.HasPrefix(s, "git ")) {
				t.Errorf("%s: the string %q: the windows must not run git", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d files: the test is not looking at app/ui", checked)
	}
}
