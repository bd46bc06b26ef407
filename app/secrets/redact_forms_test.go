package secrets_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sandbar/app/secrets"
)

var update = flag.Bool("update", false, "rewrite testdata/redact/{node,python}.json from node and python3")

// formValues are secrets whose encoded forms differ from them in every way
// the Redactor knows: quotes and backslashes, controls, line breaks (\n and
// \r\n), non-ASCII, astral-plane emoji, U+2028 and U+2029, and the
// characters Go escapes for HTML.
func formValues(t *testing.T) map[string]string {
	t.Helper()
	pem, err := os.ReadFile("testdata/redact/test-rsa-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"PLAIN":     "sk-ant-api03-Qz7Lm9Xy4Pw2Rt",
		"QUOTES":    `pa"ss\word-"quoted"\path`,
		"CONTROLS":  "tab\there\nnew\rline\x01\x1f\x7f\b\fend",
		"UNICODE":   "pässwörd-ключ-密码",
		"ASTRAL":    "key🔑emoji\u2028sep\u2029end-🦀",
		"HTML":      "a<b>&c-html-secret",
		"CRLF":      "correct horse\r\nbattery staple\r\n",
		"RSA_KEY":   string(pem),
		"BACKSLASH": `C:\Users\me\token\x41`,
	}
}

// nodeScript prints, for each {value, py} it reads, the value as
// JSON.stringify writes it, and a stream-json line as Claude Code prints a
// tool's result when the tool printed a JSON object holding the value as
// JSON.stringify (stream) or Python's json.dumps (stream_py) wrote it.
const nodeScript = `
const items = JSON.parse(require("fs").readFileSync(0, "utf8"));
const line = (inner) => JSON.stringify({type: "user", message: {role: "user", content: [
	{tool_use_id: "toolu_01Sandbar", type: "tool_result", content: '{"password": ' + inner + '}\n', is_error: false}]},
	parent_tool_use_id: null, session_id: "9f1c2d3e-sandbar"});
const out = {};
for (const {value, py} of items) {
	out[value] = {js: JSON.stringify(value), stream: line(JSON.stringify(value)), stream_py: line(py)};
}
process.stdout.write(JSON.stringify(out));
`

// pythonScript prints, for each value it reads, the value as json.dumps
// writes it (ensure_ascii), and that inside a JSON object written by
// json.dumps again.
const pythonScript = `
import json, sys
out = {}
for v in json.load(sys.stdin):
    out[v] = {"py": json.dumps(v), "py_nested": json.dumps({"content": '{"password": ' + json.dumps(v) + '}\n'})}
sys.stdout.write(json.dumps(out))
`

// encodedBy returns, for each value, what tool writes for it (kind →
// text), from the tool itself when it is installed, checked against the
// fixture in testdata/redact/<fixture>.json, or from that fixture when not.
// With -update it rewrites the fixture.
func encodedBy(t *testing.T, tool, script, fixture string, input any, values []string) map[string]map[string]string {
	t.Helper()
	path := filepath.Join("testdata", "redact", fixture+".json")
	var want map[string]map[string]string
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	} else if !*update {
		t.Fatal(err)
	}
	if _, err := exec.LookPath(tool); err != nil {
		if *update {
			t.Fatalf("-update needs %s", tool)
		}
		t.Logf("%s not found: using %s", tool, path)
		for _, v := range values {
			if want[v] == nil {
				t.Fatalf("%s has no entry for %q: run go test -run TestRedactEncoded -update where %s is installed", path, v, tool)
			}
		}
		return want
	}
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	flagName := map[string]string{"node": "-e", "python3": "-c"}[tool]
	cmd := exec.Command(tool, flagName, script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", tool, err, stderr.Bytes())
	}
	var got map[string]map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s printed %q: %v", tool, out, err)
	}
	if *update {
		b, err := json.MarshalIndent(got, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, v := range values {
		if !maps.Equal(got[v], want[v]) {
			t.Errorf("%s writes %q as %q; %s says %q: run go test -run TestRedactEncoded -update", tool, v, got[v], path, want[v])
		}
	}
	return got
}

// encodings returns, for each value and for "" (the text around it), the
// text each encoder writes for it: Go's encoding/json with and without
// HTML escaping and nested in itself, JavaScript's JSON.stringify alone and
// in Claude Code's stream-json, and Python's json.dumps alone and nested.
func encodings(t *testing.T, values []string) map[string]map[string]string {
	t.Helper()
	values = append([]string{""}, values...)
	py := encodedBy(t, "python3", pythonScript, "python", values, values)
	type item struct {
		Value string `json:"value"`
		Py    string `json:"py"`
	}
	items := make([]item, len(values))
	for i, v := range values {
		items[i] = item{v, py[v]["py"]}
	}
	js := encodedBy(t, "node", nodeScript, "node", items, values)

	goJSON := func(v any, html bool) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(html)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	all := map[string]map[string]string{}
	for _, v := range values {
		kinds := map[string]string{
			"go":        goJSON(v, true),
			"go_nohtml": goJSON(v, false),
			"go_nested": goJSON(map[string]any{"type": "user", "content": `{"password": ` + goJSON(v, true) + "}\n"}, true),
		}
		maps.Copy(kinds, py[v])
		maps.Copy(kinds, js[v])
		all[v] = kinds
	}
	return all
}

// leaks returns the 8-byte windows of text that are not in template and
// are in out: pieces of a secret that redaction left behind.
func leaks(text, template, out string) []string {
	var left []string
	for i := 0; i+8 <= len(text); i++ {
		w := text[i : i+8]
		if !strings.Contains(template, w) && strings.Contains(out, w) && !slices.Contains(left, w) {
			left = append(left, w)
		}
	}
	return left
}

// TestRedactEncoded redacts each value as real encoders write it: Go,
// JavaScript (node) and Python, alone and nested one in another, and in a
// stream-json line as Claude Code prints it. Nothing of the secret's text
// may be left: no 8-byte window of it that is not also in the text an
// empty value gives.
func TestRedactEncoded(t *testing.T) {
	secretsByName := formValues(t)
	r := secrets.NewRedactor(secretsByName)
	enc := encodings(t, slices.Collect(maps.Values(secretsByName)))
	for _, name := range slices.Sorted(maps.Keys(secretsByName)) {
		v := secretsByName[name]
		kinds := slices.Sorted(maps.Keys(enc[v]))
		if len(kinds) != 8 {
			t.Fatalf("%s: encoded as %q only", name, kinds)
		}
		for _, kind := range kinds {
			text, template := enc[v][kind], enc[""][kind]
			out := r.Redact(text)
			if !strings.Contains(out, "[redacted:"+name+"]") {
				t.Errorf("%s, %s: not redacted: %s", name, kind, out)
			}
			if left := leaks(text, template, out); len(left) > 0 {
				t.Errorf("%s, %s: %q left in %s", name, kind, left, out)
			}
			if got := writeSplit(t, r, text, len(text)/3, len(text)/2); got != out {
				t.Errorf("%s, %s: the Writer wrote %s, Redact %s", name, kind, got, out)
			}
		}
	}
}

// TestRedactLogLines prints each value raw into a log that is then split
// into lines, each redacted on its own: every line of the value that is 8
// bytes or more once trimmed is redacted.
func TestRedactLogLines(t *testing.T) {
	secretsByName := formValues(t)
	r := secrets.NewRedactor(secretsByName)
	for name, v := range secretsByName {
		text := "$ cat secret\n" + v + "\n$ echo done\n"
		var out []string
		for line := range strings.SplitSeq(text, "\n") {
			out = append(out, r.Redact(line))
		}
		got := strings.Join(out, "\n")
		for line := range strings.SplitSeq(v, "\n") {
			line = strings.TrimSpace(line)
			if len(line) < 8 {
				continue
			}
			if left := leaks(line, "", got); len(left) > 0 {
				t.Errorf("%s: %q left in %q", name, left, got)
			}
		}
	}
	// A key's lines are all long enough: nothing of it is left.
	key := secretsByName["RSA_KEY"]
	var out []string
	for line := range strings.SplitSeq(key, "\n") {
		out = append(out, r.Redact(line))
	}
	if got := strings.Join(out, "\n"); strings.Trim(strings.ReplaceAll(got, "[redacted:RSA_KEY]", ""), "\n") != "" {
		t.Errorf("the key, line by line, became %q", got)
	}
}

// TestRedactForms checks forms no encoder here writes, and values whose
// forms do not differ from them.
func TestRedactForms(t *testing.T) {
	r := secrets.NewRedactor(map[string]string{
		"U": "pässwörd-ключ",
		"C": "a\bb\fc\x01d",
		"H": "x<y&z>w",
		"S": "emoji🔑\u2028end",
		"L": "short\nline two is long\n  indented line  \r\nabc\n",
		"T": "ab\ncd", // no line is long enough; the value still counts
	})
	for _, tc := range []struct{ in, want string }{
		// Python's ensure_ascii, upper-case hex (.NET and others).
		{`"p\u00E4ssw\u00F6rd-\u043A\u043B\u044E\u0447"`, `"[redacted:U]"`},
		{`"p\u00e4ssw\u00f6rd-\u043a\u043b\u044e\u0447"`, `"[redacted:U]"`},
		// Go before 1.22 wrote \b and \f long; JavaScript and Go now short.
		{`"a\u0008b\u000cc\u0001d"`, `"[redacted:C]"`},
		{`"a\bb\fc\u0001d"`, `"[redacted:C]"`},
		{`"a\bb\fc\u0001D"`, `"a\bb\fc\u0001D"`},
		// Go's HTML escaping, once and nested.
		{`x\u003cy\u0026z\u003ew`, `[redacted:H]`},
		{`"{\"h\": \"x\\u003cy\\u0026z\\u003ew\"}"`, `"{\"h\": \"[redacted:H]\"}"`},
		// JavaScript leaves U+2028 raw; Go and Python escape it.
		{"emoji🔑\u2028end", "[redacted:S]"},
		{`emoji🔑\u2028end`, "[redacted:S]"},
		{`emoji\ud83d\udd11\u2028end`, "[redacted:S]"},
		{`emoji\\ud83d\\udd11\\u2028end`, "[redacted:S]"},
		// Lines of 8 bytes or more, trimmed, count on their own; "short" and
		// "abc" do not.
		{"short", "short"},
		{"> line two is long", "> [redacted:L]"},
		{"\tindented line\r", "\t[redacted:L]\r"},
		{`short\nline two is long\n  indented line  \r\nabc\n`, "[redacted:L]"},
		{`"short\nline two is long\n  indented line  \r\nab`, `"short\n[redacted:L]\n  [redacted:L]  \r\nab`},
		{"ab\ncd ab", "[redacted:T] ab"},
		{`ab\ncd`, "[redacted:T]"},
	} {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
