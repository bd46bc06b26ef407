package devcontainer

import (
	"path"
	"strings"

	"github.com/tailscale/hujson"
)

// Feature is one entry of the file's features: an id as written
// ("ghcr.io/devcontainers/features/go:1", "./local-feature") and the
// options the file gives it.
type Feature struct {
	ID      string
	Options []Option // in the file's order
	// LocalPath is set for a feature in the repository ("./x"): its folder,
	// resolved against the devcontainer.json's folder.
	LocalPath string
	// RequiredBy is set by OrderFeatures on a feature it added because
	// another one dependsOn it: that feature's id.
	RequiredBy string
}

// Option is one option of a feature. The spec passes options to a
// feature's install script as environment variables, so every value is
// text; Bool says the file wrote true or false rather than a string.
type Option struct {
	Name  string
	Value string
	Bool  bool
}

// EnvName is the variable the spec passes the option in: every character
// that is not a letter, digit or '_' becomes '_', leading digits and '_'
// become one '_', and the name is upper-cased.
func (o Option) EnvName() string {
	b := []byte(o.Name)
	for i, c := range b {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b[i] = '_'
		}
	}
	s := string(b)
	if t := strings.TrimLeft(s, "0123456789_"); len(t) != len(s) {
		s = "_" + t
	}
	return strings.ToUpper(s)
}

// ResourceName is the id without its version tag or digest, the name
// installsAfter and overrideFeatureInstallOrder use:
// "ghcr.io/devcontainers/features/go:1" → "ghcr.io/devcontainers/features/go".
func (f Feature) ResourceName() string { return resourceName(f.ID) }

func resourceName(id string) string {
	if strings.HasPrefix(id, "./") || strings.HasPrefix(id, "../") || strings.Contains(id, "://") {
		return id
	}
	if i := strings.Index(id, "@"); i >= 0 {
		id = id[:i]
	}
	slash := strings.LastIndex(id, "/")
	if i := strings.LastIndex(id, ":"); i > slash {
		id = id[:i]
	}
	return id
}

const featuresExample = `{ "ghcr.io/devcontainers/features/go:1": { "version": "1.23" } }`

func (d *decoder) features(v *hujson.Value) []Feature {
	ms, ok := d.object(v, "features", featuresExample)
	if !ok {
		return nil
	}
	var out []Feature
	for _, m := range ms {
		field := join("features", m.name)
		f := Feature{ID: m.name}
		if m.name == "" || strings.ContainsFunc(m.name, isSpaceOrControl) {
			d.errorf(m.nameOff, "%s is not a feature id — write one like \"ghcr.io/devcontainers/features/go:1\"", field)
			continue
		}
		switch {
		case strings.HasPrefix(m.name, "./") || strings.HasPrefix(m.name, "../"):
			f.LocalPath = d.repoPath(m.val, field, m.name)
			if f.LocalPath == "" {
				continue
			}
		case path.IsAbs(m.name) || strings.HasPrefix(m.name, "~"):
			d.errorf(m.nameOff, "%s is a folder of this machine — a session never sees the host's files; put the feature in the repository and name it \"./folder\"", field)
			continue
		}
		switch m.val.Value.Kind() {
		case 'n':
		case '"':
			// The spec's older form: "id": "1.23" is the version option.
			s, ok := d.str(m.val, field, `"1.23"`)
			if !ok {
				continue
			}
			f.Options = []Option{{Name: "version", Value: s}}
		case '{':
			opts, _ := d.object(m.val, field, `{ "version": "1.23" }`)
			for _, o := range opts {
				of := join(field, o.name)
				switch o.val.Value.Kind() {
				case '"':
					if s, ok := d.str(o.val, of, `"1.23"`); ok {
						f.Options = append(f.Options, Option{Name: o.name, Value: s})
					}
				case 't', 'f':
					f.Options = append(f.Options, Option{Name: o.name, Value: string(o.val.Value.(hujson.Literal)), Bool: true})
				case '0':
					d.errorf(o.val.StartOffset, "%s is a number — feature options are strings or booleans; write it in quotes, like \"%s\"", of, o.val.Value.(hujson.Literal))
				default:
					d.typeError(o.val, of, "a string or a boolean", `"1.23" or true`)
				}
			}
		default:
			d.typeError(m.val, field, "an object of options", `{ "version": "1.23" }`)
			continue
		}
		out = append(out, f)
	}
	return out
}

// checkOverrideOrder refuses an overrideFeatureInstallOrder entry that
// names no feature of the file, as the spec asks.
func (d *decoder) checkOverrideOrder(ms []member, cfg *Config) {
	for _, m := range ms {
		if m.name != "overrideFeatureInstallOrder" || isNull(m.val) {
			continue
		}
		arr, ok := m.val.Value.(*hujson.Array)
		if !ok {
			return
		}
		for i, id := range cfg.OverrideFeatureInstallOrder {
			found := false
			for _, f := range cfg.Features {
				if f.ResourceName() == resourceName(id) {
					found = true
				}
			}
			if !found && i < len(arr.Elements) {
				d.errorf(arr.Elements[i].StartOffset, "overrideFeatureInstallOrder[%d] %s names no feature in features — remove it or add the feature", i, quote(id))
			}
		}
	}
}
