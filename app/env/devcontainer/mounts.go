package devcontainer

import (
	"path"
	"strings"

	"github.com/tailscale/hujson"
)

const mountExample = `"source=cache,target=/home/vscode/.cache,type=volume" or { "type": "volume", "source": "cache", "target": "/home/vscode/.cache" }`

// mounts decodes mounts in the string (docker --mount) and object forms.
// A bind of a host path is refused: the promise is that a session never
// sees the person's files.
func (d *decoder) mounts(v *hujson.Value) []Mount {
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		d.typeError(v, "mounts", "an array", "["+mountExample+"]")
		return nil
	}
	var out []Mount
	targets := map[string]bool{}
	for i := range arr.Elements {
		e := &arr.Elements[i]
		field := index("mounts", i)
		var kv [][2]string
		switch e.Value.Kind() {
		case '"':
			s, ok := d.str(e, field, mountExample)
			if !ok {
				continue
			}
			for _, part := range strings.Split(s, ",") {
				k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
				if k != "" {
					kv = append(kv, [2]string{strings.ToLower(k), val})
				}
			}
		case '{':
			ms, _ := d.object(e, field, mountExample)
			for _, m := range ms {
				if isNull(m.val) {
					continue
				}
				f := join(field, m.name)
				if m.val.Value.Kind() == 't' || m.val.Value.Kind() == 'f' {
					kv = append(kv, [2]string{m.name, string(m.val.Value.(hujson.Literal))})
					continue
				}
				s, ok := d.str(m.val, f, `"volume"`)
				if ok {
					kv = append(kv, [2]string{m.name, s})
				}
			}
		default:
			d.typeError(e, field, "a string or an object", mountExample)
			continue
		}
		m, ok := d.mount(e, field, kv)
		if !ok {
			continue
		}
		if targets[m.Target] {
			d.errorf(e.StartOffset, "%s mounts on %s again — keep one mount per folder", field, quote(m.Target))
			continue
		}
		targets[m.Target] = true
		out = append(out, m)
	}
	return out
}

func (d *decoder) mount(e *hujson.Value, field string, kv [][2]string) (Mount, bool) {
	m := Mount{Type: MountVolume} // docker's default type
	var source string
	for _, p := range kv {
		k, val := p[0], p[1]
		switch k {
		case "type":
			m.Type = MountType(val)
		case "source", "src":
			source = val
		case "target", "destination", "dst":
			m.Target = val
		case "readonly", "ro":
			m.ReadOnly = val == "" || val == "true" || val == "1"
		default:
			d.unsupportedField(join(field, k))
		}
	}
	switch m.Type {
	case "bind":
		d.errorf(e.StartOffset, "%s is a bind mount of a host path — a session never sees the host's files; use a volume (type=volume) instead", field)
		return m, false
	case MountVolume:
		if strings.ContainsAny(source, "/\\") || strings.HasPrefix(source, "~") || source == "." || source == ".." {
			d.errorf(e.StartOffset, "%s gives the volume the source %s, a path — a session never sees the host's files; name the volume instead, like \"source=cache\"", field, quote(source))
			return m, false
		}
		m.Source = source
	case MountTmpfs:
		if source != "" {
			d.unsupportedField(join(field, "source"))
		}
	default:
		d.errorf(e.StartOffset, "%s has type %s — Sandbar mounts type=volume and type=tmpfs; use one of those", field, quote(string(m.Type)))
		return m, false
	}
	if m.Target == "" || !path.IsAbs(m.Target) {
		d.errorf(e.StartOffset, "%s has no absolute target — add one like \"target=/home/vscode/.cache\"", field)
		return m, false
	}
	m.Target = path.Clean(m.Target)
	if systemPath(m.Target) || m.Target == GuestWorkspace {
		d.errorf(e.StartOffset, "%s would cover %s, which the session needs — mount on a folder of its own, like \"/home/vscode/.cache\"", field, quote(m.Target))
		return m, false
	}
	return m, true
}
