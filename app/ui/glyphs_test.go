package ui

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"github.com/go-text/typesetting/font"
)

// fontHas returns whether the theme's font of style has each rune.
func fontHas(t *testing.T, style fyne.TextStyle) func(rune) bool {
	t.Helper()
	f, err := font.ParseTTF(bytes.NewReader(Theme().Font(style).Content()))
	if err != nil {
		t.Fatal(err)
	}
	return func(r rune) bool {
		_, ok := f.NominalGlyph(r)
		return ok
	}
}

// literalRunes maps each rune above ASCII in the string and rune
// literals of the Go files (not tests) matched by globs to where it is.
func literalRunes(t *testing.T, globs ...string) map[rune]string {
	t.Helper()
	out := map[rune]string{}
	fset := token.NewFileSet()
	for _, g := range globs {
		files, _ := filepath.Glob(g)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				bl, ok := n.(*ast.BasicLit)
				if !ok || (bl.Kind != token.STRING && bl.Kind != token.CHAR) {
					return true
				}
				v := bl.Value
				if bl.Kind == token.STRING {
					v, _ = strconv.Unquote(bl.Value)
				}
				for _, r := range v {
					if r > 0x7f {
						if _, seen := out[r]; !seen {
							out[r] = fset.Position(bl.Pos()).String()
						}
					}
				}
				return true
			})
		}
	}
	return out
}

// TestEveryGlyphIsInTheThemesFont: every character above ASCII that the
// windows write (their string literals) is in the theme's own text font,
// regular and bold; what the monospaced views write (the readable log,
// the live output) is in its monospaced font. A character the font lacks
// is drawn from whatever font the system has, or as a box; one that
// Fyne's symbol font has (→) took the space after it along, which that
// font lacks, and drew "Settings →� Storage".
func TestEveryGlyphIsInTheThemesFont(t *testing.T) {
	regular, bold := fontHas(t, fyne.TextStyle{}), fontHas(t, fyne.TextStyle{Bold: true})
	for r, where := range literalRunes(t, "*.go", "widget/*.go") {
		if !regular(r) || !bold(r) {
			t.Errorf("%q (%U, %s) is not in the theme's text font", r, r, where)
		}
	}
	mono := fontHas(t, fyne.TextStyle{Monospace: true})
	for r, where := range literalRunes(t, "../readable/*.go") {
		if !mono(r) {
			t.Errorf("%q (%U, %s) is not in the theme's monospaced font", r, r, where)
		}
	}
}
