package secrets

import (
	"os"
	"strings"
	"testing"
)

// benchSecrets returns ten secrets of the kinds a person keeps: API keys
// and tokens, passwords with quotes, backslashes, controls and non-ASCII,
// a two-line value and an RSA private key.
func benchSecrets(tb testing.TB) map[string]string {
	tb.Helper()
	pem, err := os.ReadFile("testdata/redact/test-rsa-key.pem")
	if err != nil {
		tb.Fatal(err)
	}
	return map[string]string{
		"ANTHROPIC_API_KEY":       "sk-ant-api03-" + strings.Repeat("Xy7_Qz-9Lm", 9) + "AAAAA",
		"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-" + strings.Repeat("pQ4-rT8_vW", 9) + "BBBBB",
		"GITHUB_TOKEN":            "ghp_" + strings.Repeat("a1B2c3D4e5F6", 3),
		"AWS_SECRET_ACCESS_KEY":   "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"DB_PASSWORD":             `pa"ss\word!<&>`,
		"UNICODE_PASSWORD":        "pässwörd-ключ-密码",
		"EMOJI_PASSWORD":          "key🔑emoji\u2028sep",
		"CONTROL_PASSWORD":        "ctl\x01\x1f\bvalue\t42",
		"TWO_LINES":               "first line of it\nsecond line of it\n",
		"DEPLOY_KEY":              string(pem),
	}
}

// BenchmarkRedactLine redacts a 200-byte stream-json line, without and
// with secrets in it (three, in three forms), with the ten secrets of
// benchSecrets, against strings.Replacer over the same patterns.
func BenchmarkRedactLine(b *testing.B) {
	r := NewRedactor(benchSecrets(b))
	repl := r.replacer()
	lines := []struct{ name, line string }{
		{"clean", `{"type":"assistant","message":{"id":"msg_01","content":[{"type":"text","text":"I ran the tests; all 42 pass. Next I will look at the parser and the flaky retry in client.go."}]},"session_id":"5f0c2d"}`},
		{"secrets", `{"type":"user","message":{"content":[{"type":"tool_result","content":"{\"db\": \"pa\\\"ss\\\\word!\\u003c\\u0026\\u003e\", \"k\": \"key🔑emoji` + "\u2028" +
			`sep\"}\nghp_a1B2c3D4e5F6a1B2c3D4e5F6a1B2c3D4e5F6"}]}}`},
	}
	for _, l := range lines {
		if len(l.line) != 200 {
			b.Fatalf("the %s line is %d bytes", l.name, len(l.line))
		}
		out := r.Redact(l.line)
		if l.name == "secrets" && strings.Count(out, "[redacted:") != 3 {
			b.Fatalf("the line is not redacted: %s", out)
		}
		for _, impl := range []struct {
			name   string
			redact func(string) string
		}{{"Redactor", r.Redact}, {"Replacer", repl.Replace}} {
			if got := impl.redact(l.line); got != out {
				b.Fatalf("%s: %s, Redactor %s", impl.name, got, out)
			}
			b.Run(l.name+"/"+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(l.line)))
				for b.Loop() {
					impl.redact(l.line)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/line")
				b.ReportMetric(float64(len(r.pats)), "patterns")
			})
		}
	}
}
