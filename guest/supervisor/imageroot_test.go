package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sandbar/guest/protocol"
)

func TestCheckLibc(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		arch  string
		want  string // "" accepted, else a part of the error
	}{
		{"glibc amd64", map[string]string{"lib64/ld-linux-x86-64.so.2": ""}, "amd64", ""},
		{"glibc arm64", map[string]string{"lib/ld-linux-aarch64.so.1": ""}, "arm64", ""},
		{"musl", map[string]string{"lib/ld-musl-x86_64.so.1": "", "bin/busybox": ""}, "amd64", MuslMessage},
		{"musl in usr/lib", map[string]string{"usr/lib/ld-musl-aarch64.so.1": ""}, "arm64", MuslMessage},
		{"glibc and musl", map[string]string{"lib64/ld-linux-x86-64.so.2": "", "lib/ld-musl-x86_64.so.1": ""}, "amd64", ""},
		{"neither", map[string]string{"bin/app": ""}, "amd64", "no glibc dynamic loader (/lib64/ld-linux-x86-64.so.2)"},
		{"the other arch's glibc", map[string]string{"lib/ld-linux-aarch64.so.1": ""}, "amd64", "no glibc dynamic loader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			err := checkLibc(root, tt.arch)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
	if !strings.Contains(MuslMessage, "this image uses musl libc (Alpine?); the agent needs glibc: use a Debian or Ubuntu based image") {
		t.Errorf("the musl refusal reads %q", MuslMessage)
	}
}

func TestImageEnv(t *testing.T) {
	env := imageEnv(&protocol.ImageConfig{Env: []string{
		"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin",
		"GOPATH=/go", "HOME=/root", "USER=root", "EMPTY=", "junk", "=x", "A=b=c",
	}})
	want := "/opt/agent/bin:/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"
	if env["PATH"] != want {
		t.Errorf("PATH = %q, want %q", env["PATH"], want)
	}
	if env["GOPATH"] != "/go" || env["A"] != "b=c" {
		t.Errorf("env = %v", env)
	}
	if v, ok := env["EMPTY"]; !ok || v != "" {
		t.Errorf("EMPTY= was lost: %v", env)
	}
	for _, k := range []string{"HOME", "USER", "junk", ""} {
		if _, ok := env[k]; ok {
			t.Errorf("%q came through: %v", k, env)
		}
	}
	// An image with no PATH gets Sandbar's.
	if got := imageEnv(&protocol.ImageConfig{})["PATH"]; got != basePath {
		t.Errorf("PATH without the image's = %q, want %q", got, basePath)
	}
	if imageEnv(nil) != nil {
		t.Error("no image config gave an environment")
	}
}

func TestImageSudo(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		ok    bool
		why   string
	}{
		{"none", map[string]string{"usr/bin/env": ""}, false, "sudo is not in the image"},
		{"debian", map[string]string{"usr/bin/sudo": "", "etc/sudoers": "root ALL=(ALL) ALL\n@includedir /etc/sudoers.d\n"}, true, ""},
		{"old form", map[string]string{"usr/bin/sudo": "", "etc/sudoers": "#includedir /etc/sudoers.d\n"}, true, ""},
		{"no drop-ins", map[string]string{"usr/bin/sudo": "", "etc/sudoers": "root ALL=(ALL) ALL\n"}, false, "does not read /etc/sudoers.d"},
		{"no sudoers", map[string]string{"bin/sudo": ""}, false, "does not read /etc/sudoers.d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			ok, why := imageSudo(root)
			if ok != tt.ok || !strings.Contains(why, tt.why) || (tt.ok && why != "") {
				t.Errorf("imageSudo = %v, %q; want %v, %q", ok, why, tt.ok, tt.why)
			}
		})
	}
}

func TestLookupUserByUID(t *testing.T) {
	etc := t.TempDir()
	writeFiles(t, etc, map[string]string{"passwd": "root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/bash\n"})
	for _, q := range []string{"1000", "node"} {
		u, ok, err := lookupUser(filepath.Join(etc, "passwd"), q)
		if err != nil || !ok || u != (User{Name: "node", UID: 1000, GID: 1000, Home: "/home/node"}) {
			t.Errorf("lookup %s = %+v, %v, %v", q, u, ok, err)
		}
	}
	if _, ok, err := lookupUser(filepath.Join(etc, "passwd"), "1001"); ok || err != nil {
		t.Errorf("uid 1001 found (%v, %v)", ok, err)
	}
	if _, ok, err := lookupUser(filepath.Join(etc, "missing"), "1000"); ok || err != nil {
		t.Errorf("an image without /etc/passwd: %v, %v", ok, err)
	}
	// An image without users yet gets them.
	bare := t.TempDir()
	if u, err := ensureUser(bare, "agent", 1000, "/home/agent"); err != nil || u.UID != 1000 {
		t.Fatalf("ensureUser in an empty /etc: %+v, %v", u, err)
	}
	for _, f := range []string{"passwd", "group"} {
		if b, _ := os.ReadFile(filepath.Join(bare, f)); !strings.HasPrefix(string(b), "agent:x:1000:") {
			t.Errorf("%s = %q", f, b)
		}
	}
}

// imageSys is a System whose /etc/passwd is users, and which adds the
// users EnsureUser asks for.
type imageSys struct {
	*fakeSys
	users map[string]User
	added []string
}

func (s *imageSys) LookupUser(q string) (User, bool, error) {
	for _, u := range s.users {
		if u.Name == q || strconv.Itoa(u.UID) == q {
			return u, true, nil
		}
	}
	return User{}, false, nil
}

func (s *imageSys) EnsureUser(name string, uid int, home string) (User, error) {
	if u, ok := s.users[name]; ok {
		return u, nil
	}
	s.added = append(s.added, name)
	u := User{Name: name, UID: uid, GID: uid, Home: home}
	s.users[name] = u
	return u, nil
}

func TestImageAgent(t *testing.T) {
	node := User{Name: "node", UID: 1000, GID: 1000, Home: "/home/node"}
	app := User{Name: "app", UID: 1001, GID: 1001, Home: "/home/app"}
	root := User{Name: "root", UID: 0, GID: 0, Home: "/root"}
	tests := []struct {
		name  string
		users []User
		user  string // the image's
		want  string
		added bool
		note  string
	}{
		{"the image's user of the workspace's uid", []User{root, node}, "node", "node", false, "the image's user node (uid 1000)"},
		{"by uid", []User{root, node}, "1000:1000", "node", false, "the image's user node"},
		{"no user named: the uid's account", []User{root, node}, "", "node", false, "the image's user node"},
		{"root named", []User{root, node}, "root", "node", false, "the image runs as root"},
		{"another uid", []User{root, app}, "app", "agent", true, "the image's user app has uid 1001, but the workspace belongs to uid 1000"},
		{"not in passwd", []User{root}, "ghost", "agent", true, `the image's user "ghost" is not in its /etc/passwd`},
		{"nobody of that uid", []User{root}, "", "agent", true, "the agent runs as agent (uid 1000), added"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := &imageSys{fakeSys: newFakeSys(t), users: map[string]User{}}
			for _, u := range tt.users {
				sys.users[u.Name] = u
			}
			s := &session{cfg: Config{Sys: sys, ToolRoot: ToolRoot}}
			u, notes, err := s.imageAgent(1000, &protocol.ImageConfig{User: tt.user})
			if err != nil {
				t.Fatal(err)
			}
			if u.Name != tt.want || u.UID != 1000 {
				t.Errorf("agent = %+v, want %s with uid 1000", u, tt.want)
			}
			if added := slices.Contains(sys.added, "agent"); added != tt.added {
				t.Errorf("agent added: %v, want %v", added, tt.added)
			}
			if !strings.Contains(strings.Join(notes, "\n"), tt.note) {
				t.Errorf("notes %q lack %q", notes, tt.note)
			}
		})
	}
}

func TestClipNotes(t *testing.T) {
	var many []string
	for range protocol.MaxNotes + 3 {
		many = append(many, strings.Repeat("é", protocol.MaxNote))
	}
	got := clipNotes(many)
	if len(got) != protocol.MaxNotes {
		t.Fatalf("%d notes", len(got))
	}
	ev := protocol.Event{Ev: protocol.EvAgentStarted, PID: 1, Notes: got}
	if err := ev.Validate(); err != nil {
		t.Errorf("clipped notes do not validate: %v", err)
	}
	ev.Notes = many
	if err := ev.Validate(); err == nil {
		t.Error("too many notes validated")
	}
}
