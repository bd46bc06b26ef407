package main

import (
	"os"
	"regexp"
	"testing"
)

// TestAppMetadata: the app names itself "Sandbar" (the tray's title), as
// FyneApp.toml does, whichever way it was built.
func TestAppMetadata(t *testing.T) {
	toml, err := os.ReadFile("FyneApp.toml")
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` = "([^"]*)"`).FindSubmatch(toml)
		if m == nil {
			t.Fatalf("FyneApp.toml has no %s", name)
		}
		return string(m[1])
	}
	md := appMetadata()
	if md.Name != "Sandbar" || md.Name != field("Name") {
		t.Errorf("the app's name is %q, want Sandbar, as FyneApp.toml says (%q)", md.Name, field("Name"))
	}
	if md.ID != field("ID") {
		t.Errorf("the app's id is %q, FyneApp.toml says %q", md.ID, field("ID"))
	}
}
