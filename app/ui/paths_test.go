package ui

import "testing"

func TestShortPathsWithTilde(t *testing.T) {
	for _, tc := range []struct{ path, home, want string }{
		{"/home/ann", "/home/ann", "~"},
		{"/home/ann/src/shop", "/home/ann", "~/src/shop"},
		{"/home/ann/src/shop", "/home/ann/", "~/src/shop"},
		{"/home/ann/", "/home/ann", "~/"},
		{"/home/annie/src", "/home/ann", "/home/annie/src"}, // a sibling whose name starts the same
		{"/srv/shop", "/home/ann", "/srv/shop"},
		{"/home/ann/src/shop", "", "/home/ann/src/shop"}, // home unknown
		{"/srv/shop", "/", "/srv/shop"},
		{"", "/home/ann", ""},
	} {
		if got := tildePath(tc.path, tc.home); got != tc.want {
			t.Errorf("tildePath(%q, %q) = %q, want %q", tc.path, tc.home, got, tc.want)
		}
	}
}
