package main

import (
	"slices"
	"testing"
)

func TestCommand(t *testing.T) {
	tests := []struct {
		args []string
		gui  bool
		rest []string
	}{
		{nil, true, []string{}},
		{[]string{"gui"}, true, []string{"gui"}},
		// The first Finder launch of a quarantined app.
		{[]string{"-psn_0_12345"}, true, []string{}},
		{[]string{"-psn_0_12345", "gui"}, true, []string{"gui"}},
		{[]string{"-psn_0_1", "-psn_0_2"}, true, []string{}},
		{[]string{"start", "--repo", "."}, false, []string{"start", "--repo", "."}},
		{[]string{"-psn_0_12345", "list"}, false, []string{"list"}},
		{[]string{"gui", "extra"}, false, []string{"gui", "extra"}},
		{[]string{"-psn"}, false, []string{"-psn"}},
		{[]string{"help"}, false, []string{"help"}},
	}
	for _, tc := range tests {
		in := slices.Clone(tc.args)
		gui, rest := command(tc.args)
		if gui != tc.gui || !slices.Equal(rest, tc.rest) {
			t.Errorf("command(%q) = %v, %q; want %v, %q", tc.args, gui, rest, tc.gui, tc.rest)
		}
		if !slices.Equal(in, tc.args) {
			t.Errorf("command(%q) changed its argument to %q", in, tc.args)
		}
	}
}
