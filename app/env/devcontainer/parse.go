package devcontainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

const (
	// MaxFileSize bounds a devcontainer.json: real ones are a few KiB.
	MaxFileSize = 1 << 20
	// maxDepth bounds nesting, so a hostile file cannot make the parser
	// recurse a million levels deep; the spec's fields need four.
	maxDepth = 64
	// maxErrors bounds how many problems one Parse reports.
	maxErrors = 20
	// maxNotes and maxUnsupported bound what a hostile file can make the
	// environment's log say.
	maxNotes       = 20
	maxUnsupported = 100
)

// decoder walks the parsed JSONC and collects the model, the errors, the
// notes and the unsupported fields.
type decoder struct {
	file        string
	data        []byte // the whole file, for positions
	base        int    // offset of the parsed text in data (a BOM before it)
	workspace   string // what ${containerWorkspaceFolder} is
	errs        []*Error
	notes       []string
	unsupported []string
	noteCount   int
}

// errorf records a problem at off, an offset of the parsed text.
func (d *decoder) errorf(off int, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	line, col := position(d.data, d.base+off)
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) note(off int, format string, args ...any) {
	d.noteCount++
	if d.noteCount > maxNotes {
		return
	}
	line, col := position(d.data, d.base+off)
	d.notes = append(d.notes, fmt.Sprintf("%s:%d:%d: ", d.file, line, col)+fmt.Sprintf(format, args...))
}

func (d *decoder) unsupportedField(name string) { d.unsupported = append(d.unsupported, name) }

// err is what Parse returns: nil, the one *Error, or all of them joined
// (errors.As finds the first).
func (d *decoder) err() error {
	switch len(d.errs) {
	case 0:
		return nil
	case 1:
		return d.errs[0]
	}
	errs := make([]error, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// Parse reads a devcontainer.json. file is the file's path inside the
// repository, slash-separated, as Find gives it: it names the file in
// errors and is where build and feature paths are resolved from. The
// error is an *Error, or several joined, each with its line and column.
func Parse(file string, data []byte) (*Config, error) {
	if !fs.ValidPath(file) || file == "." {
		return nil, fmt.Errorf("devcontainer: %q is not a path inside a repository (Parse wants one like \".devcontainer/devcontainer.json\")", file)
	}
	d := &decoder{file: file, data: data, workspace: GuestWorkspace}
	if len(data) > MaxFileSize {
		d.errorf(0, "the file is %d bytes, over the %d a devcontainer.json may have — shrink it", len(data), MaxFileSize)
		return nil, d.err()
	}
	if !utf8.Valid(data) {
		d.errorf(firstInvalidUTF8(data), "the file is not UTF-8 text here — save it as UTF-8")
		return nil, d.err()
	}
	body := data
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) {
		body, d.base = body[3:], 3
	}
	if off, deep := tooDeep(body); deep {
		d.errorf(off, "values are nested more than %d deep — a devcontainer.json needs a few levels; flatten it", maxDepth)
		return nil, d.err()
	}
	v, err := hujson.Parse(body)
	if err != nil {
		off, msg := syntaxError(body, err)
		d.errorf(off, "malformed JSONC: %s — fix the syntax here (comments and trailing commas are fine)", msg)
		return nil, d.err()
	}
	cfg := &Config{File: file}
	d.config(&v, cfg)
	if err := d.err(); err != nil {
		return nil, err
	}
	slices.Sort(d.unsupported)
	cfg.Unsupported = slices.Compact(d.unsupported)
	if n := len(cfg.Unsupported); n > maxUnsupported {
		cfg.Unsupported = append(cfg.Unsupported[:maxUnsupported], fmt.Sprintf("… and %d more", n-maxUnsupported))
	}
	cfg.Notes = d.notes
	if d.noteCount > maxNotes {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s: … and %d more notes like these", file, d.noteCount-maxNotes))
	}
	return cfg, nil
}

// syntaxError finds where hujson stopped and why. hujson reports the place
// only in its text ("hujson: line L, column C: why", C in bytes); it is
// turned back into an offset so the column is counted like every other.
func syntaxError(body []byte, err error) (off int, msg string) {
	msg = err.Error()
	if inner := errors.Unwrap(err); inner != nil {
		msg = inner.Error()
	}
	var line, col int
	if _, scanErr := fmt.Sscanf(err.Error(), "hujson: line %d, column %d:", &line, &col); scanErr == nil {
		off = offsetOf(body, line, col)
	} else {
		off = len(body)
	}
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	msg = strings.ToValidUTF8(msg, "?")
	return off, msg
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// tooDeep scans for nesting past maxDepth outside strings and comments.
func tooDeep(b []byte) (int, bool) {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return 0, false // hujson reports the unclosed comment
			}
			i += 2 + end + 1
		case c == '{' || c == '[':
			depth++
			if depth > maxDepth {
				return i, true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return 0, false
}

// member is one name: value of an object.
type member struct {
	name    string
	nameOff int
	val     *hujson.Value
}

// object gives the members of v, which must be an object, refusing a name
// given twice (editors keep the last and other tools the first; a person
// reading the file would see one and get the other).
func (d *decoder) object(v *hujson.Value, field, example string) ([]member, bool) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		d.typeError(v, field, "an object", example)
		return nil, false
	}
	seen := map[string]int{}
	var ms []member
	for i := range obj.Members {
		m := &obj.Members[i]
		name, ok := d.decodeString(&m.Name, "a name in "+field)
		if !ok {
			continue
		}
		if first, dup := seen[name]; dup {
			line, _ := position(d.data, d.base+first)
			d.errorf(m.Name.StartOffset, "%s is given twice (first on line %d) — keep one", quote(join(field, name)), line)
			continue
		}
		seen[name] = m.Name.StartOffset
		ms = append(ms, member{name: name, nameOff: m.Name.StartOffset, val: &m.Value})
	}
	return ms, true
}

// topLevel is what messages call the file's own object.
const topLevel = "the file"

// join makes a field's name for messages: build.args, features["x"].
// Names from the file are quoted unless plain, so no byte of the file
// reaches a log or a terminal unescaped.
func join(parent, name string) string {
	simple := name != ""
	for _, r := range name {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			simple = false
			break
		}
	}
	top := parent == "" || parent == topLevel
	switch {
	case top && simple:
		return name
	case top:
		return strconv.Quote(strings.ToValidUTF8(name, "?"))
	case simple:
		return parent + "." + name
	}
	return parent + "[" + strconv.Quote(strings.ToValidUTF8(name, "?")) + "]"
}

func index(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }

// quote shows a value of the file in a message, shortened.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(strings.ToValidUTF8(s, "?"))
}

func isNull(v *hujson.Value) bool { return v.Value.Kind() == 'n' }

func kindOf(v *hujson.Value) string {
	switch v.Value.Kind() {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "a value"
}

func (d *decoder) typeError(v *hujson.Value, field, want, example string) {
	d.errorf(v.StartOffset, "%s must be %s, not %s — write it like %s", field, want, kindOf(v), example)
}

// decodeString decodes a string literal, refusing NUL, which no path,
// name, variable or argument can hold.
func (d *decoder) decodeString(v *hujson.Value, field string) (string, bool) {
	lit, ok := v.Value.(hujson.Literal)
	if !ok || lit.Kind() != '"' {
		d.typeError(v, field, "a string", `"text"`)
		return "", false
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		d.errorf(v.StartOffset, "%s is not a valid JSON string — check its \\ escapes", field)
		return "", false
	}
	if strings.ContainsRune(s, 0) {
		d.errorf(v.StartOffset, "%s holds a NUL character (\\u0000) — remove it", field)
		return "", false
	}
	return s, true
}

// str decodes a string field and expands its host-side variables.
func (d *decoder) str(v *hujson.Value, field, example string) (string, bool) {
	if lit, ok := v.Value.(hujson.Literal); !ok || lit.Kind() != '"' {
		d.typeError(v, field, "a string", example)
		return "", false
	}
	s, ok := d.decodeString(v, field)
	if !ok {
		return "", false
	}
	return d.substitute(s, v.StartOffset, field), true
}

// strs decodes an array of strings.
func (d *decoder) strs(v *hujson.Value, field, example string) ([]string, bool) {
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		d.typeError(v, field, "an array of strings", example)
		return nil, false
	}
	out := make([]string, 0, len(arr.Elements))
	all := true
	for i := range arr.Elements {
		s, ok := d.str(&arr.Elements[i], index(field, i), `"text"`)
		all = all && ok
		out = append(out, s)
	}
	return out, all
}

// integer decodes a whole-number field.
func (d *decoder) integer(v *hujson.Value, field, example string) (int64, bool) {
	lit, ok := v.Value.(hujson.Literal)
	if !ok || lit.Kind() != '0' {
		d.typeError(v, field, "a whole number", example)
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil {
		d.errorf(v.StartOffset, "%s is %s, not a whole number — write it like %s", field, lit, example)
		return 0, false
	}
	return n, true
}
