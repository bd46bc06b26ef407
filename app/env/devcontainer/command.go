package devcontainer

// Command is a lifecycle command in one of the spec's three forms:
//   - a string, run by /bin/sh -c (Shell);
//   - an array, run as it is, with no shell (Argv);
//   - an object of named parts, each a string or an array, all started
//     together and waited for (Parts, in the file's order).
//
// The zero Command runs nothing.
type Command struct {
	Shell string
	Argv  []string
	Parts []NamedCommand
}

// NamedCommand is one part of an object-form Command. Exactly one of Shell
// and Argv is set.
type NamedCommand struct {
	Name  string
	Shell string
	Argv  []string
}

// Run is one process to start in the guest: a name for the log ("" for a
// command of one part) and its argv.
type Run struct {
	Name string
	Argv []string
}

// IsZero reports whether the command runs nothing.
func (c Command) IsZero() bool {
	return c.Shell == "" && len(c.Argv) == 0 && len(c.Parts) == 0
}

// Runs gives what to run in the guest: one Run for the string and array
// forms, one per part for the object form. The Runs of one Command are
// started together; the command has succeeded when every one exited 0.
// The guest runs them in the container workspace folder as the remote user,
// with containerEnv and remoteEnv set.
func (c Command) Runs() []Run {
	switch {
	case c.Shell != "":
		return []Run{{Argv: shellArgv(c.Shell)}}
	case len(c.Argv) > 0:
		return []Run{{Argv: append([]string(nil), c.Argv...)}}
	}
	var runs []Run
	for _, p := range c.Parts {
		if p.Shell != "" {
			runs = append(runs, Run{Name: p.Name, Argv: shellArgv(p.Shell)})
		} else {
			runs = append(runs, Run{Name: p.Name, Argv: append([]string(nil), p.Argv...)})
		}
	}
	return runs
}

func shellArgv(s string) []string { return []string{"/bin/sh", "-c", s} }
