package features

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tailscale/hujson"

	"sandbar/app/env/devcontainer"
)

// MetaFile is the feature's own description, at the top of its folder.
const MetaFile = "devcontainer-feature.json"

// InstallScript is the script the spec runs to install a feature.
const InstallScript = "install.sh"

// Meta is what a feature's devcontainer-feature.json says that Sandbar
// acts on.
type Meta struct {
	ID      string
	Version string
	Name    string
	// Options are the options the feature takes, by name.
	Options map[string]OptionSpec
	// ContainerEnv joins the environment of the agent and of the features
	// installed after this one, in order of the names.
	ContainerEnv  []devcontainer.EnvVar
	DependsOn     []devcontainer.Feature
	InstallsAfter []string
	// Unsupported names the fields Sandbar does not act on (a feature's
	// mounts, privileged, its own lifecycle commands), sorted, for the
	// session's log.
	Unsupported []string
}

// describing tells the fields that only describe a feature: nothing to
// act on.
func describing(field string) bool {
	switch field {
	case "id", "version", "name", "description", "documentationURL", "licenseURL", "keywords",
		"options", "containerEnv", "dependsOn", "installsAfter", "legacyIds", "deprecated", "customizations":
		return true
	}
	return false
}

// OptionSpec is one option a feature declares.
type OptionSpec struct {
	// Type is "string" or "boolean".
	Type string
	// Default is the value when the devcontainer.json gives none, as text.
	Default string
	// Proposals are suggested values; any string is allowed.
	Proposals []string
	// Enum, when set, are the only values allowed.
	Enum []string
}

// metaJSON is devcontainer-feature.json as written.
type metaJSON struct {
	ID            string                                `json:"id"`
	Version       string                                `json:"version"`
	Name          string                                `json:"name"`
	Options       map[string]optionJSON                 `json:"options"`
	ContainerEnv  map[string]string                     `json:"containerEnv"`
	DependsOn     map[string]map[string]json.RawMessage `json:"dependsOn"`
	InstallsAfter []string                              `json:"installsAfter"`
}

type optionJSON struct {
	Type      string          `json:"type"`
	Default   json.RawMessage `json:"default"`
	Proposals []string        `json:"proposals"`
	Enum      []string        `json:"enum"`
}

// ParseMeta reads a feature's devcontainer-feature.json (JSON with
// comments, as the reference tools accept). what names the feature in
// errors.
func ParseMeta(what string, data []byte) (Meta, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("feature %s: %s %s: ask the feature's author to fix it, or remove the feature from devcontainer.json", what, MetaFile, fmt.Sprintf(format, a...))
	}
	std, err := hujson.Standardize(data)
	if err != nil {
		return Meta{}, bad("is not valid JSON (%v)", err)
	}
	var mj metaJSON
	if err := json.Unmarshal(std, &mj); err != nil {
		return Meta{}, bad("does not read (%v)", err)
	}
	if mj.ID == "" {
		return Meta{}, bad("has no id")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(std, &fields); err != nil {
		return Meta{}, bad("is not a JSON object (%v)", err)
	}
	var unsupported []string
	for _, k := range sortedKeys(fields) {
		if !describing(k) {
			unsupported = append(unsupported, k)
		}
	}
	m := Meta{Unsupported: unsupported, ID: mj.ID, Version: mj.Version, Name: mj.Name, Options: map[string]OptionSpec{}, InstallsAfter: mj.InstallsAfter}
	for name, o := range mj.Options {
		spec := OptionSpec{Type: o.Type, Proposals: o.Proposals, Enum: o.Enum}
		switch o.Type {
		case "boolean":
			var b bool
			if len(o.Default) > 0 && json.Unmarshal(o.Default, &b) != nil {
				return Meta{}, bad("option %q is a boolean whose default is not true or false", name)
			}
			spec.Default = fmt.Sprint(b)
		case "string":
			var s string
			if len(o.Default) > 0 && json.Unmarshal(o.Default, &s) != nil {
				return Meta{}, bad("option %q is a string whose default is not a string", name)
			}
			spec.Default = s
		default:
			return Meta{}, bad("option %q has type %q; the spec has \"string\" and \"boolean\"", name, o.Type)
		}
		m.Options[name] = spec
	}
	for _, name := range sortedKeys(mj.ContainerEnv) {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return Meta{}, bad("containerEnv has a name %q that is not a variable name", name)
		}
		m.ContainerEnv = append(m.ContainerEnv, devcontainer.EnvVar{Name: name, Value: mj.ContainerEnv[name]})
	}
	for _, id := range sortedKeys(mj.DependsOn) {
		if strings.HasPrefix(id, ".") || strings.HasPrefix(id, "/") {
			return Meta{}, bad("dependsOn names %q, a folder: a dependency must be a feature in a registry", id)
		}
		dep := devcontainer.Feature{ID: id}
		opts := mj.DependsOn[id]
		for _, name := range sortedKeys(opts) {
			var s string
			var b bool
			switch {
			case json.Unmarshal(opts[name], &s) == nil:
				dep.Options = append(dep.Options, devcontainer.Option{Name: name, Value: s})
			case json.Unmarshal(opts[name], &b) == nil:
				dep.Options = append(dep.Options, devcontainer.Option{Name: name, Value: fmt.Sprint(b), Bool: true})
			default:
				return Meta{}, bad("dependsOn %q option %q is neither a string nor a boolean", id, name)
			}
		}
		m.DependsOn = append(m.DependsOn, dep)
	}
	return m, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ResolveOptions gives every option of the feature its value: the one
// devcontainer.json gives (given), else the feature's default; sorted by
// name. An option the feature does not declare, a boolean that is not
// true or false, or a value outside an enum is an error that names the
// feature and what to write.
func (m Meta) ResolveOptions(featureID string, given []devcontainer.Option) ([]devcontainer.Option, error) {
	values := map[string]string{}
	for name, spec := range m.Options {
		values[name] = spec.Default
	}
	for _, o := range given {
		spec, ok := m.Options[o.Name]
		if !ok {
			have := "it takes no options"
			if len(m.Options) > 0 {
				have = "its options are " + strings.Join(sortedKeys(m.Options), ", ")
			}
			return nil, fmt.Errorf("feature %s has no option %q (%s): fix the feature's options in devcontainer.json", featureID, o.Name, have)
		}
		switch {
		case spec.Type == "boolean" && o.Value != "true" && o.Value != "false":
			return nil, fmt.Errorf("feature %s option %q is a boolean, not %q: write true or false", featureID, o.Name, o.Value)
		case len(spec.Enum) > 0 && !slices.Contains(spec.Enum, o.Value):
			return nil, fmt.Errorf("feature %s option %q is %q, not one of %s: write one of those", featureID, o.Name, o.Value, strings.Join(spec.Enum, ", "))
		}
		values[o.Name] = o.Value
	}
	out := make([]devcontainer.Option, 0, len(values))
	for _, name := range sortedKeys(values) {
		out = append(out, devcontainer.Option{Name: name, Value: values[name], Bool: m.Options[name].Type == "boolean"})
	}
	return out, nil
}
