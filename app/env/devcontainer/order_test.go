package devcontainer

import (
	"reflect"
	"strings"
	"testing"
)

func ids(fs []Feature) []string {
	var out []string
	for _, f := range fs {
		s := f.ID
		if f.RequiredBy != "" {
			s += "<-" + f.RequiredBy
		}
		out = append(out, s)
	}
	return out
}

func feat(id string, opts ...string) Feature {
	f := Feature{ID: id}
	for i := 0; i+1 < len(opts); i += 2 {
		f.Options = append(f.Options, Option{Name: opts[i], Value: opts[i+1]})
	}
	return f
}

func TestOrderFeatures(t *testing.T) {
	const (
		common = "ghcr.io/devcontainers/features/common-utils:2"
		node   = "ghcr.io/devcontainers/features/node:1"
		goF    = "ghcr.io/devcontainers/features/go:1"
		py     = "ghcr.io/devcontainers/features/python:1"
	)
	tests := []struct {
		name     string
		features []Feature
		meta     map[string]FeatureMeta
		override []string
		want     []string
	}{
		{
			name:     "no links: one round, by resource name",
			features: []Feature{feat(py), feat(node), feat(goF)},
			meta:     map[string]FeatureMeta{py: {}, node: {}, goF: {}},
			want:     []string{goF, node, py},
		},
		{
			name:     "installsAfter matches without the version",
			features: []Feature{feat(common), feat(goF)},
			meta: map[string]FeatureMeta{
				common: {InstallsAfter: []string{"ghcr.io/devcontainers/features/go"}},
				goF:    {},
			},
			want: []string{goF, common},
		},
		{
			name:     "installsAfter a feature not installed is ignored",
			features: []Feature{feat(node)},
			meta:     map[string]FeatureMeta{node: {InstallsAfter: []string{"ghcr.io/devcontainers/features/python"}}},
			want:     []string{node},
		},
		{
			name:     "dependsOn adds the dependency, recursively",
			features: []Feature{feat(py)},
			meta: map[string]FeatureMeta{
				py:     {DependsOn: []Feature{feat(goF, "version", "1.23")}},
				goF:    {DependsOn: []Feature{feat(common)}},
				common: {},
			},
			want: []string{common + "<-" + goF, goF + "<-" + py, py},
		},
		{
			name:     "dependsOn a feature already there with equal options adds none",
			features: []Feature{feat(node), feat(goF, "version", "1.23")},
			meta: map[string]FeatureMeta{
				node: {DependsOn: []Feature{feat(goF, "version", "1.23")}},
				goF:  {},
			},
			want: []string{goF, node},
		},
		{
			name:     "dependsOn with other options is another feature, as the spec has it",
			features: []Feature{feat(node), feat(goF, "version", "1.22")},
			meta: map[string]FeatureMeta{
				node: {DependsOn: []Feature{feat(goF)}},
				goF:  {},
			},
			want: []string{goF, goF + "<-" + node, node},
		},
		{
			// The spec's rounds: python (priority 2) alone in round 1; node
			// (1) waits for common-utils, which goes in round 2 with go (0);
			// node is last, although the override names it.
			name:     "override installs what it names in its round, first",
			features: []Feature{feat(common), feat(goF), feat(node), feat(py)},
			meta:     map[string]FeatureMeta{common: {}, goF: {}, node: {InstallsAfter: []string{"ghcr.io/devcontainers/features/common-utils"}}, py: {}},
			override: []string{"ghcr.io/devcontainers/features/python", "ghcr.io/devcontainers/features/node"},
			want:     []string{py, common, goF, node},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OrderFeatures(tt.features, tt.meta, tt.override...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), tt.want) {
				t.Errorf("order %q, want %q", ids(got), tt.want)
			}
		})
	}
}

func TestOrderFeaturesMoreOptionsFirst(t *testing.T) {
	a, b := feat("x/go:1"), feat("x/go:1", "version", "1.22")
	got, err := OrderFeatures([]Feature{a, b}, map[string]FeatureMeta{"x/go:1": {}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Options) != 1 || len(got[1].Options) != 0 {
		t.Errorf("got %+v; want the one with options first", got)
	}
}

func TestOrderFeaturesStableAcrossInputOrder(t *testing.T) {
	meta := map[string]FeatureMeta{"a:1": {}, "b:1": {InstallsAfter: []string{"a"}}, "c:1": {}, "d:1": {DependsOn: []Feature{feat("c:1")}}}
	one, err := OrderFeatures([]Feature{feat("d:1"), feat("b:1"), feat("c:1"), feat("a:1")}, meta)
	if err != nil {
		t.Fatal(err)
	}
	two, err := OrderFeatures([]Feature{feat("a:1"), feat("c:1"), feat("b:1"), feat("d:1")}, meta)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a:1", "c:1", "b:1", "d:1"}
	if !reflect.DeepEqual(ids(one), want) || !reflect.DeepEqual(ids(two), want) {
		t.Errorf("orders %q and %q; want %q for both", ids(one), ids(two), want)
	}
}

func TestOrderFeaturesErrors(t *testing.T) {
	tests := []struct {
		name     string
		features []Feature
		meta     map[string]FeatureMeta
		want     string
	}{
		{
			name:     "dependsOn cycle",
			features: []Feature{feat("x/a:1"), feat("x/z:1")},
			meta: map[string]FeatureMeta{
				"x/a:1": {DependsOn: []Feature{feat("x/b:1")}},
				"x/b:1": {DependsOn: []Feature{feat("x/a:1")}},
				"x/z:1": {},
			},
			want: "features depend on each other in a cycle (x/a:1 → x/b:1 → x/a:1), through dependsOn or installsAfter: remove one of them, or ask the feature's author to break the cycle",
		},
		{
			name:     "installsAfter cycle",
			features: []Feature{feat("x/a:1"), feat("x/b:2")},
			meta: map[string]FeatureMeta{
				"x/a:1": {InstallsAfter: []string{"x/b"}},
				"x/b:2": {InstallsAfter: []string{"x/a:1"}},
			},
			want: "features depend on each other in a cycle (x/a:1 → x/b:2 → x/a:1), through dependsOn or installsAfter: remove one of them, or ask the feature's author to break the cycle",
		},
		{
			name:     "missing metadata",
			features: []Feature{feat("x/a:1")},
			meta:     map[string]FeatureMeta{},
			want:     "no metadata for feature x/a:1: read its devcontainer-feature.json before ordering the install",
		},
		{
			name:     "missing metadata of a dependency",
			features: []Feature{feat("x/a:1")},
			meta:     map[string]FeatureMeta{"x/a:1": {DependsOn: []Feature{feat("x/b:1")}}},
			want:     "no metadata for feature x/b:1: read its devcontainer-feature.json before ordering the install",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OrderFeatures(tt.features, tt.meta)
			if err == nil || err.Error() != tt.want {
				t.Errorf("OrderFeatures = %q, %v; want the error %q", ids(got), err, tt.want)
			}
		})
	}
}

// A feature that dependsOn itself with new options each time would grow
// the list without end; it stops with words.
func TestOrderFeaturesBounded(t *testing.T) {
	meta := map[string]FeatureMeta{}
	meta["x/a:1"] = FeatureMeta{DependsOn: []Feature{feat("x/a:1", "n", "1")}}
	// Every node of x/a:1 has the same metadata, so the added one asks for
	// x/a:1 with n=1, which is itself: bounded by equality.
	got, err := OrderFeatures([]Feature{feat("x/a:1")}, meta)
	if want := []string{"x/a:1<-x/a:1", "x/a:1"}; err != nil || !reflect.DeepEqual(ids(got), want) {
		t.Errorf("self-dependency: %q, %v; want %q", ids(got), err, want)
	}
	var deps []Feature
	for i := 0; i < maxFeatures+5; i++ {
		id := "x/f" + strings.Repeat("x", i) + ":1"
		deps = append(deps, feat(id))
		meta[id] = FeatureMeta{}
	}
	meta["x/root:1"] = FeatureMeta{DependsOn: deps}
	_, err = OrderFeatures([]Feature{feat("x/root:1")}, meta)
	if err == nil || !strings.Contains(err.Error(), "more than 100 features") {
		t.Errorf("a hundred and five dependencies: %v; want the bound's error", err)
	}
}

func TestResourceName(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io/devcontainers/features/go:1":           "ghcr.io/devcontainers/features/go",
		"ghcr.io/devcontainers/features/go":             "ghcr.io/devcontainers/features/go",
		"localhost:5000/f/go:1.2.3":                     "localhost:5000/f/go",
		"localhost:5000/f/go":                           "localhost:5000/f/go",
		"ghcr.io/x/go@sha256:0123":                      "ghcr.io/x/go",
		"./local":                                       "./local",
		"https://example.invalid/feature.tgz":           "https://example.invalid/feature.tgz",
		"ghcr.io/devcontainers/features/common-utils:2": "ghcr.io/devcontainers/features/common-utils",
	} {
		if got := resourceName(in); got != want {
			t.Errorf("resourceName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOptionEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"version": "VERSION", "installZsh": "INSTALLZSH", "node-gyp": "NODE_GYP", "2fa": "_FA", "__x": "_X", "a.b": "A_B",
	} {
		if got := (Option{Name: in}).EnvName(); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}
