package devcontainer

import (
	"path"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

const commandExample = `"npm ci", ["make", "test"] or { "deps": "go mod download" }`

// command decodes a lifecycle command in its string, array or object form.
func (d *decoder) command(v *hujson.Value, field string) Command {
	switch v.Value.Kind() {
	case '"':
		s, _ := d.str(v, field, commandExample)
		if strings.TrimSpace(s) == "" {
			return Command{}
		}
		return Command{Shell: s}
	case '[':
		argv, ok := d.argv(v, field)
		if !ok {
			return Command{}
		}
		return Command{Argv: argv}
	case '{':
		ms, _ := d.object(v, field, commandExample)
		var c Command
		for _, m := range ms {
			f := join(field, m.name)
			switch m.val.Value.Kind() {
			case '"':
				s, _ := d.str(m.val, f, `"go mod download"`)
				if strings.TrimSpace(s) != "" {
					c.Parts = append(c.Parts, NamedCommand{Name: m.name, Shell: s})
				}
			case '[':
				if argv, ok := d.argv(m.val, f); ok && len(argv) > 0 {
					c.Parts = append(c.Parts, NamedCommand{Name: m.name, Argv: argv})
				}
			case 'n':
			default:
				d.typeError(m.val, f, "a string or an array of strings", `"go mod download" or ["go", "mod", "download"]`)
			}
		}
		return c
	}
	d.typeError(v, field, "a string, an array of strings or an object of those", commandExample)
	return Command{}
}

func (d *decoder) argv(v *hujson.Value, field string) ([]string, bool) {
	argv, ok := d.strs(v, field, `["make", "test"]`)
	if !ok {
		return nil, false
	}
	if len(argv) > 0 && argv[0] == "" {
		d.errorf(v.StartOffset, "%s starts with an empty program name — put the program first, like [\"make\", \"test\"]", field)
		return nil, false
	}
	return argv, true
}

// ports decodes forwardPorts: numbers and "host:port" strings.
func (d *decoder) ports(v *hujson.Value) []Port {
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		d.typeError(v, "forwardPorts", "an array", `[3000, "db:5432"]`)
		return nil
	}
	var out []Port
	for i := range arr.Elements {
		e := &arr.Elements[i]
		field := index("forwardPorts", i)
		switch e.Value.Kind() {
		case '0':
			n, ok := d.integer(e, field, "3000")
			if !ok {
				continue
			}
			if n < 1 || n > 65535 {
				d.errorf(e.StartOffset, "%s is %d — a port is 1 to 65535", field, n)
				continue
			}
			out = append(out, Port{Port: int(n)})
		case '"':
			s, ok := d.str(e, field, `"db:5432"`)
			if !ok {
				continue
			}
			host, portText, hasHost := strings.Cut(s, ":")
			if !hasHost {
				host, portText = "", s
			}
			n, err := strconv.Atoi(portText)
			switch {
			case hasHost && !validHost(host):
				d.errorf(e.StartOffset, "%s %s has no valid host before ':' — write it like \"db:5432\", or a number for a port of the session", field, quote(s))
			case err != nil || n < 1 || n > 65535:
				d.errorf(e.StartOffset, "%s %s has no port 1 to 65535 — write it like 3000 or \"db:5432\"", field, quote(s))
			default:
				out = append(out, Port{Host: host, Port: n})
			}
		default:
			d.typeError(e, field, "a number or a \"host:port\" string", `3000 or "db:5432"`)
		}
	}
	return out
}

func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// user decodes remoteUser or containerUser: a name or uid, with an
// optional :group, as an image's USER line has it.
func (d *decoder) user(v *hujson.Value, field string) string {
	s, ok := d.str(v, field, `"vscode"`)
	if !ok {
		return ""
	}
	valid := s != "" && len(s) <= 64 && !strings.HasPrefix(s, "-")
	for _, r := range s {
		if !(r == '.' || r == '-' || r == '_' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			valid = false
		}
	}
	if !valid {
		d.errorf(v.StartOffset, "%s %s is not a user name — write a name like \"vscode\" or a uid like \"1000\"", field, quote(s))
		return ""
	}
	return s
}

// workspaceFolder decodes workspaceFolder: an absolute folder of the
// guest where a link to the repository goes. It may not replace a folder
// the system needs, nor be inside the repository.
func (d *decoder) workspaceFolder(v *hujson.Value) string {
	s, ok := d.str(v, "workspaceFolder", `"/workspaces/project"`)
	if !ok {
		return ""
	}
	if !path.IsAbs(s) {
		d.errorf(v.StartOffset, "workspaceFolder %s is not an absolute path — write one like \"/workspaces/project\"", quote(s))
		return ""
	}
	p := path.Clean(s)
	switch {
	case p == GuestWorkspace:
		return p
	case systemPath(p) || homeLike(p):
		d.errorf(v.StartOffset, "workspaceFolder %s would replace a folder the system needs — choose a folder of its own, like \"/workspaces/project\" (the repository stays at %s)", quote(s), GuestWorkspace)
		return ""
	case strings.HasPrefix(p, GuestWorkspace+"/"):
		d.errorf(v.StartOffset, "workspaceFolder %s is inside %s, where the repository is — choose a folder outside it, like \"/workspaces/project\"", quote(s), GuestWorkspace)
		return ""
	}
	return p
}

// systemPath reports whether p is "/" or a folder of the system that a
// link or a mount must not replace or cover.
func systemPath(p string) bool {
	switch p {
	case "/", "/usr", "/usr/local", "/var":
		return true
	}
	for _, dir := range []string{
		"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
		"/proc", "/run", "/sbin", "/sys", "/usr/bin", "/usr/include",
		"/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/sbin",
		"/usr/share", "/usr/local/bin", "/usr/local/lib", "/usr/local/sbin",
		"/var/run",
	} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// homeLike reports whether p is one of the top folders that hold other
// things, which a link would replace whole.
func homeLike(p string) bool {
	switch p {
	case "/home", "/root", "/tmp", "/opt", "/srv", "/mnt", "/media", "/workspaces", "/var/tmp":
		return true
	}
	return false
}

// hostRequirements decodes cpus and memory; storage and gpu are named as
// unsupported.
func (d *decoder) hostRequirements(v *hujson.Value) HostRequirements {
	var hr HostRequirements
	ms, ok := d.object(v, "hostRequirements", `{ "cpus": 4, "memory": "8gb" }`)
	if !ok {
		return hr
	}
	for _, m := range ms {
		if isNull(m.val) {
			continue
		}
		field := join("hostRequirements", m.name)
		switch m.name {
		case "cpus":
			n, ok := d.integer(m.val, field, "4")
			if !ok {
				continue
			}
			if n < 1 || n > 1024 {
				d.errorf(m.val.StartOffset, "%s is %d — give a number of CPUs from 1 to 1024, like 4", field, n)
				continue
			}
			hr.CPUs = int(n)
		case "memory":
			s, ok := d.str(m.val, field, `"8gb"`)
			if !ok {
				continue
			}
			n, ok := parseSize(s)
			if !ok {
				d.errorf(m.val.StartOffset, "%s %s is not a size — write it like \"8gb\", \"512mb\" or \"8GiB\"", field, quote(s))
				continue
			}
			hr.MemoryBytes = n
		default:
			d.unsupportedField(field)
		}
	}
	return hr
}

// parseSize reads "4gb", "8GiB", "512mb", "1.5 tb": a positive number
// and a unit of k, m, g or t, with "b" or "ib" after it, any case. The
// spec's tools count all of them in powers of 1024, so "gb" and "gib" are
// the same here.
func parseSize(s string) (int64, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimSuffix(s, "b")
	s = strings.TrimSuffix(s, "i")
	if s == "" {
		return 0, false
	}
	var shift uint
	switch s[len(s)-1] {
	case 'k':
		shift = 10
	case 'm':
		shift = 20
	case 'g':
		shift = 30
	case 't':
		shift = 40
	default:
		return 0, false
	}
	num := strings.TrimSpace(s[:len(s)-1])
	if num == "" || strings.ContainsAny(num, "eExX+-_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || f*float64(int64(1)<<shift) > float64(int64(1)<<44) {
		return 0, false // over 16 TiB is no machine's memory
	}
	n := int64(f * float64(int64(1)<<shift))
	return n, n > 0
}
