package devcontainer

import (
	"path"
	"strings"
)

// The spec's ${...} variables, and what a Sandbar session makes of them.
//
//   - ${localEnv:NAME} and ${localEnv:NAME:default} (also ${env:NAME}): the
//     spec reads the host's environment. A repository's file is hostile
//     data and the host's environment holds the person's tokens, so Sandbar
//     never reads it: the variable becomes its default, or "" when it has
//     none, and Config.Notes says so. Refusing the file instead would
//     break the many files that pass a token this way, and a session never
//     gets the host's tokens either way; named secrets are the way in.
//   - ${localWorkspaceFolder} and ${localWorkspaceFolderBasename}: the
//     host's folder is never shown to a session; the session's copy of the
//     repository is at GuestWorkspace, so they name that (the basename is
//     "workspace").
//   - ${containerWorkspaceFolder} and ${containerWorkspaceFolderBasename}:
//     the file's workspaceFolder, or GuestWorkspace.
//   - ${containerEnv:NAME}: only the guest's environment knows it, so it is
//     kept as written; ExpandContainerEnv fills it in from the image's
//     environment when the caller has it.
//   - anything else (${devcontainerId}, a typo) is kept as written, with a
//     note.

// substitute expands the host-side variables of s, a string of the file at
// byte offset off, for the field named field.
func (d *decoder) substitute(s string, off int, field string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		whole, inner := s[i:i+j+1], s[i+2:i+j]
		s = s[i+j+1:]
		kind, rest, _ := strings.Cut(inner, ":")
		switch kind {
		case "localEnv", "env":
			name, def, _ := strings.Cut(rest, ":")
			b.WriteString(def)
			how := "empty"
			if def != "" {
				how = "its default " + quote(def)
			}
			d.note(off, "%s: %s is %s in a session — Sandbar never reads this machine's environment for a repository's file; give the session a named secret instead", field, quote("${localEnv:"+name+"}"), how)
		case "localWorkspaceFolder":
			b.WriteString(GuestWorkspace)
		case "localWorkspaceFolderBasename":
			b.WriteString(path.Base(GuestWorkspace))
		case "containerWorkspaceFolder":
			b.WriteString(d.workspace)
		case "containerWorkspaceFolderBasename":
			b.WriteString(path.Base(d.workspace))
		case "containerEnv":
			b.WriteString(whole)
		default:
			b.WriteString(whole)
			d.note(off, "%s: %s is not a variable Sandbar knows; it is kept as written", field, quote(whole))
		}
	}
}

// ExpandContainerEnv fills in the ${containerEnv:NAME} and
// ${containerEnv:NAME:default} references of s from env, the guest's
// environment (the image's, then containerEnv). A name env does not have
// becomes its default, or "".
func ExpandContainerEnv(s string, env func(name string) (string, bool)) string {
	const prefix = "${containerEnv:"
	var b strings.Builder
	for {
		i := strings.Index(s, prefix)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		name, def, _ := strings.Cut(s[i+len(prefix):i+j], ":")
		if v, ok := env(name); ok {
			b.WriteString(v)
		} else {
			b.WriteString(def)
		}
		s = s[i+j+1:]
	}
}
