package dockerbuild

import (
	"encoding/json"
	"fmt"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"sandbar/app/env/ociimage"
)

// MaxDockerfile bounds the Dockerfile read from the repository.
const MaxDockerfile = 1 << 20

// Dockerfile is what the host needs of a Dockerfile: its stages, the
// images to pull, and the copy the builder runs, whose FROM lines name the
// images as loaded into the VM.
type Dockerfile struct {
	Stages []Stage
	// Bases are the images the build needs, each once, in order of use:
	// FROM images and COPY --from images of the stages up to the target.
	Bases []Base
	// Text is the Dockerfile the builder runs: the person's, line for
	// line, with each image they name replaced by BaseName(i).
	Text []byte
	// ContextSources are the paths in the build context that the build
	// reads (COPY and ADD sources, RUN --mount=type=bind sources), each
	// relative to the context, "." for all of it, in order and each
	// once. A source Sandbar cannot resolve without running the build
	// (a variable, a glob) is widened to the folder it lies in, so the
	// list never names less than the build reads: the person's trust
	// covers these files (see session's buildinputs.go).
	ContextSources []string
}

// Stage is one FROM.
type Stage struct {
	Name string // "" when the FROM has no AS
	// From is the image (ARG-substituted) or the stage it builds on.
	From string
	// FromStage is the index of the stage it builds on, or -1.
	FromStage int
	// Base is the index in Bases of its image; -1 for a stage or scratch.
	Base int
	Line int
}

// Base is an image the build starts from.
type Base struct {
	Ref  string // as the Dockerfile names it, ARG-substituted
	Line int    // where it is first named
}

// BaseName is the name the i-th base image has in the builder's storage.
func BaseName(i int) string { return fmt.Sprintf("localhost/sandbar-base-%d:latest", i) }

// ParseError is a Dockerfile the builder cannot take, with its line.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s, line %d: %s", e.File, e.Line, e.Msg)
}

// instructions are those buildah's Dockerfile reader knows.
var instructions = map[string]bool{
	"FROM": true, "RUN": true, "CMD": true, "LABEL": true, "MAINTAINER": true, "EXPOSE": true,
	"ENV": true, "ADD": true, "COPY": true, "ENTRYPOINT": true, "VOLUME": true, "USER": true,
	"WORKDIR": true, "ARG": true, "ONBUILD": true, "STOPSIGNAL": true, "HEALTHCHECK": true, "SHELL": true,
}

// logical is one instruction: its physical lines joined.
type logical struct {
	first, last int // 1-based physical lines
	text        string
}

// Parse reads a Dockerfile (file names it in errors) with the build's
// arguments (devcontainer.json's build.args; they override the ARG
// defaults before the first FROM) and its target stage ("" for the last).
func Parse(file string, data []byte, args map[string]string, target string) (*Dockerfile, error) {
	perr := func(line int, format string, a ...any) error {
		return &ParseError{File: file, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	if len(data) > MaxDockerfile {
		return nil, perr(0, "is over %d bytes: Sandbar reads Dockerfiles up to that size", MaxDockerfile)
	}
	if strings.ContainsRune(string(data), 0) {
		return nil, perr(0, "is not text (it holds a NUL byte)")
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	escape := byte('\\')
	// Parser directives: comments of the form `# key=value` at the top.
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "#") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(t[1:]), "=")
		if !ok {
			break
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "escape":
			v = strings.TrimSpace(v)
			if v != "\\" && v != "`" {
				return nil, perr(i+1, "the escape directive %q: use \\ or `", v)
			}
			escape = v[0]
		case "syntax":
			return nil, perr(i+1, "the syntax directive asks for a BuildKit frontend (%s): Sandbar builds with buildah, which has none; remove the line", strings.TrimSpace(v))
		}
	}
	var insts []logical
	var cur *logical
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if cur == nil && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if cur != nil && strings.HasPrefix(t, "#") {
			continue // a comment inside a continued instruction
		}
		if cur == nil {
			cur = &logical{first: i + 1}
		}
		cur.last = i + 1
		if t != "" && t[len(t)-1] == escape {
			cur.text += t[:len(t)-1] + " "
			continue
		}
		cur.text += t
		insts = append(insts, *cur)
		cur = nil
	}
	if cur != nil {
		insts = append(insts, *cur)
	}

	meta := map[string]string{}
	hostPlat := "linux/" + runtime.GOARCH
	predefined := map[string]string{"BUILDPLATFORM": hostPlat, "TARGETPLATFORM": hostPlat,
		"BUILDOS": "linux", "TARGETOS": "linux", "BUILDARCH": runtime.GOARCH, "TARGETARCH": runtime.GOARCH}
	lookup := func(name string) (string, bool) {
		if v, ok := meta[name]; ok {
			return v, true
		}
		v, ok := predefined[name]
		return v, ok
	}
	df := &Dockerfile{}
	baseIndex := map[string]int{}
	addBase := func(ref string, line int) (int, error) {
		if _, err := ociimage.NormalName(ref); err != nil {
			return -1, perr(line, "%q is not an image reference: %v", ref, err)
		}
		if i, ok := baseIndex[ref]; ok {
			return i, nil
		}
		baseIndex[ref] = len(df.Bases)
		df.Bases = append(df.Bases, Base{Ref: ref, Line: line})
		return len(df.Bases) - 1, nil
	}
	stageIndex := func(name string) int {
		if n, err := strconv.Atoi(name); err == nil && n >= 0 && n < len(df.Stages) {
			return n
		}
		for i, s := range df.Stages {
			if s.Name != "" && strings.EqualFold(s.Name, name) {
				return i
			}
		}
		return -1
	}
	// rewrite says how to change a physical line range of the person's
	// file in the copy the builder runs.
	type rewrite struct {
		first, last int
		text        string // replaces the lines; the rest are left blank
		old, new    string // or: a replacement within the lines
	}
	var rewrites []rewrite
	targetFound := target == ""
	for _, in := range insts {
		word, rest, _ := strings.Cut(in.text, " ")
		if i := strings.IndexAny(word, "\t"); i >= 0 {
			word, rest = word[:i], word[i+1:]+" "+rest
		}
		kw := strings.ToUpper(word)
		rest = strings.TrimSpace(rest)
		if !instructions[kw] {
			return nil, perr(in.first, "%s is not a Dockerfile instruction buildah knows (the ones it knows: FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, USER, ...)", clip(word))
		}
		if targetFound && target != "" && kw == "FROM" {
			break // stages after the target are not built
		}
		switch kw {
		case "ARG":
			if len(df.Stages) > 0 {
				continue // a stage's own ARG: not for FROM lines
			}
			for _, a := range splitWords(rest) {
				k, v, hasDefault := strings.Cut(a, "=")
				if bv, ok := args[k]; ok {
					meta[k] = bv
				} else if hasDefault {
					sub, err := substitute(v, lookup)
					if err != nil {
						return nil, perr(in.first, "ARG %s: %v", clip(k), err)
					}
					meta[k] = sub
				} else {
					meta[k] = ""
				}
			}
		case "FROM":
			words := splitWords(rest)
			plat := ""
			for len(words) > 0 && strings.HasPrefix(words[0], "--") {
				f := words[0]
				words = words[1:]
				v, ok := strings.CutPrefix(f, "--platform=")
				if !ok {
					return nil, perr(in.first, "FROM %s: the only flag Sandbar's builder takes is --platform", clip(f))
				}
				sub, err := substitute(v, lookup)
				if err != nil {
					return nil, perr(in.first, "FROM --platform: %v", err)
				}
				plat = sub
			}
			if len(words) != 1 && !(len(words) == 3 && strings.EqualFold(words[1], "AS")) {
				return nil, perr(in.first, "FROM takes an image and, optionally, AS and a stage name: %q", clip(in.text))
			}
			if plat != "" && plat != hostPlat && plat != hostPlat+"/v8" {
				return nil, perr(in.first, "FROM --platform=%s: Sandbar builds in a VM of this machine's architecture (%s) and emulates no other; remove the flag or name %s", plat, hostPlat, hostPlat)
			}
			from, err := substitute(words[0], lookup)
			if err != nil {
				return nil, perr(in.first, "FROM %s: %v", clip(words[0]), err)
			}
			if from == "" {
				return nil, perr(in.first, "FROM %s names no image: set the build argument it uses (build.args in devcontainer.json) or give the ARG a default", clip(words[0]))
			}
			st := Stage{From: from, FromStage: stageIndex(from), Base: -1, Line: in.first}
			if len(words) == 3 {
				st.Name = strings.ToLower(words[2])
			}
			nameOut := from
			if st.FromStage < 0 && !strings.EqualFold(from, "scratch") {
				b, err := addBase(from, in.first)
				if err != nil {
					return nil, err
				}
				st.Base = b
				nameOut = BaseName(b)
			}
			text := "FROM " + nameOut
			if st.Name != "" {
				text += " AS " + st.Name
			}
			rewrites = append(rewrites, rewrite{first: in.first, last: in.last, text: text})
			df.Stages = append(df.Stages, st)
			if target != "" && st.Name == strings.ToLower(target) {
				targetFound = true
			}
		case "COPY", "RUN", "ADD":
			if len(df.Stages) == 0 {
				return nil, perr(in.first, "%s comes before the first FROM", kw)
			}
			if heredoc(rest) {
				return nil, perr(in.first, "%s with a heredoc (<<): the buildah in Sandbar's image does not read heredocs; put the lines in a script in the repository and COPY or RUN it", kw)
			}
			for _, w := range splitWords(rest) {
				if !strings.HasPrefix(w, "--") {
					break
				}
				if v, ok := strings.CutPrefix(w, "--from="); ok && kw == "COPY" {
					if strings.Contains(v, "$") {
						return nil, perr(in.first, "COPY --from=%s: a variable there is not supported by Sandbar's builder; name the stage or image", clip(v))
					}
					if stageIndex(v) >= 0 {
						continue
					}
					b, err := addBase(v, in.first)
					if err != nil {
						return nil, err
					}
					rewrites = append(rewrites, rewrite{first: in.first, last: in.last, old: "--from=" + v, new: "--from=" + BaseName(b)})
				}
				if v, ok := strings.CutPrefix(w, "--mount="); ok && kw == "RUN" {
					for _, kv := range strings.Split(v, ",") {
						if f, ok := strings.CutPrefix(kv, "from="); ok && stageIndex(f) < 0 {
							return nil, perr(in.first, "RUN --mount=...from=%s: mounting an image is not supported by Sandbar's builder; COPY --from it in a stage instead", clip(f))
						}
					}
				}
			}
			for _, src := range contextSources(kw, rest) {
				if !slices.Contains(df.ContextSources, src) {
					df.ContextSources = append(df.ContextSources, src)
				}
			}
		}
	}
	if !targetFound {
		var names []string
		for _, s := range df.Stages {
			if s.Name != "" {
				names = append(names, s.Name)
			}
		}
		has := "no named stage"
		if len(names) > 0 {
			has = "stages " + strings.Join(names, ", ")
		}
		return nil, perr(0, "build.target %q: the Dockerfile has no stage of that name (it has %s)", target, has)
	}
	if len(df.Stages) == 0 {
		return nil, perr(0, "has no FROM line: a Dockerfile starts from an image")
	}
	out := append([]string(nil), lines...)
	for _, rw := range rewrites {
		if rw.text != "" {
			out[rw.first-1] = rw.text
			for l := rw.first; l < rw.last; l++ {
				out[l] = ""
			}
			continue
		}
		for l := rw.first - 1; l < rw.last; l++ {
			if strings.Contains(out[l], rw.old) {
				out[l] = strings.Replace(out[l], rw.old, rw.new, 1)
				break
			}
		}
	}
	df.Text = []byte(strings.Join(out, "\n"))
	return df, nil
}

// contextSources are the build-context paths one COPY, ADD or RUN reads
// (see Dockerfile.ContextSources): relative to the context, cleaned,
// widened to a folder where the path holds a variable or a glob, "."
// where it would leave the context.
func contextSources(kw, rest string) []string {
	words := splitWords(rest)
	var flags, args []string
	for i, w := range words {
		if !strings.HasPrefix(w, "--") {
			args = words[i:]
			break
		}
		flags = append(flags, w)
	}
	var out []string
	switch kw {
	case "COPY", "ADD":
		for _, f := range flags {
			if strings.HasPrefix(f, "--from=") {
				return nil // from a stage or an image, not the context
			}
		}
		if j := strings.TrimSpace(strings.Join(args, " ")); strings.HasPrefix(j, "[") {
			var arr []string
			if json.Unmarshal([]byte(j), &arr) == nil {
				args = arr
			}
		}
		if len(args) < 2 {
			return nil
		}
		for _, a := range args[:len(args)-1] {
			a = unquote(a)
			if kw == "ADD" && (strings.Contains(a, "://") || strings.HasPrefix(a, "git@")) {
				continue // fetched by the builder, not read from the context
			}
			out = append(out, contextPath(a))
		}
	case "RUN":
		for _, f := range flags {
			v, ok := strings.CutPrefix(f, "--mount=")
			if !ok {
				continue
			}
			typ, src, from := "bind", ".", ""
			for _, kv := range strings.Split(unquote(v), ",") {
				k, val, _ := strings.Cut(kv, "=")
				switch k {
				case "type":
					typ = val
				case "source", "src":
					src = val
				case "from":
					from = val
				}
			}
			if typ == "bind" && from == "" {
				out = append(out, contextPath(src))
			}
		}
	}
	return out
}

// contextPath cleans a source path to one relative to the context,
// widened as contextSources says.
func contextPath(p string) string {
	if slices.Contains(strings.Split(p, "/"), "..") {
		return "." // the builder keeps it inside the context, somewhere
	}
	segs := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	for i, s := range segs {
		if strings.ContainsAny(s, "$*?[\\") {
			segs = segs[:i]
			break
		}
	}
	return path.Clean(strings.Join(segs, "/"))
}

// heredoc says whether an instruction's arguments hold a heredoc start:
// << followed by a word, optionally - and quotes (<<EOF, <<-"EOF").
func heredoc(s string) bool {
	for {
		i := strings.Index(s, "<<")
		if i < 0 {
			return false
		}
		s = s[i+2:]
		t := strings.TrimLeft(s, "-\"'")
		if t != "" && (t[0] == '_' || t[0] >= 'A' && t[0] <= 'Z' || t[0] >= 'a' && t[0] <= 'z') {
			return true
		}
	}
}

// splitWords splits on blanks outside quotes, keeping the quotes.
func splitWords(s string) []string {
	var out []string
	var b strings.Builder
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
			b.WriteByte(c)
		case c == '"' || c == '\'':
			q = c
			b.WriteByte(c)
		case c == ' ' || c == '\t':
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// substitute fills in $NAME, ${NAME}, ${NAME:-word} and ${NAME:+word} as
// Docker does in a FROM line.
func substitute(s string, lookup func(string) (string, bool)) (string, error) {
	s = unquote(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("%q has a ${ without its }", s)
			}
			expr := s[i+2 : i+end]
			i += end
			name, word, op := expr, "", ""
			if j := strings.Index(expr, ":-"); j >= 0 {
				name, word, op = expr[:j], expr[j+2:], "-"
			} else if j := strings.Index(expr, ":+"); j >= 0 {
				name, word, op = expr[:j], expr[j+2:], "+"
			}
			if !validName(name) {
				return "", fmt.Errorf("${%s}: Sandbar reads ${NAME}, ${NAME:-default} and ${NAME:+value} there", expr)
			}
			v, ok := lookup(name)
			switch op {
			case "-":
				if !ok || v == "" {
					v = word
				}
			case "+":
				if ok && v != "" {
					v = word
				} else {
					v = ""
				}
			}
			b.WriteString(v)
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i+1 {
			b.WriteByte('$')
			continue
		}
		v, _ := lookup(s[i+1 : j])
		b.WriteString(v)
		i = j - 1
	}
	return b.String(), nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// clip shortens the repository's text for an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
