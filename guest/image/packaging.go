package image

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"sandbar/guest/image/debian"
)

// aptFiles returns apt's sources and the directories its maintainer
// scripts and first run would make, so `sudo apt-get install` works in a
// session. The sources are the suite the image is built from, over plain
// HTTP for the default archive: apt checks the archive's signatures
// itself (debian-archive-keyring), and plain HTTP needs no trust in the
// network's TLS.
func aptFiles(mirror string) []entry {
	if mirror == "" || mirror == DefaultMirror {
		mirror = strings.Replace(DefaultMirror, "https://", "http://", 1)
	}
	mirror = strings.TrimRight(mirror, "/")
	security := strings.TrimSuffix(mirror, "/debian") + "/debian-security"
	sources := "Types: deb\n" +
		"URIs: " + mirror + "\n" +
		"Suites: " + Suite + " " + Suite + "-updates\n" +
		"Components: main\n" +
		"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
	if strings.HasSuffix(mirror, "/debian") {
		sources += "\n" +
			"Types: deb\n" +
			"URIs: " + security + "\n" +
			"Suites: " + Suite + "-security\n" +
			"Components: main\n" +
			"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
	}
	return []entry{
		{name: "etc/apt/sources.list.d/debian.sources", mode: 0o644, data: []byte(sources)},
		// No translated descriptions: one index less to fetch.
		{name: "etc/apt/apt.conf.d/50sandbar", mode: 0o644, data: []byte("Acquire::Languages \"none\";\n")},
		// Packages installed in a session leave out what the image leaves out.
		{name: "etc/dpkg/dpkg.cfg.d/50sandbar-excludes", mode: 0o644, data: []byte(dpkgExcludes())},
		{name: "var/lib/apt/lists/partial", mode: 0o700, dir: true},
		{name: "var/cache/apt/archives/partial", mode: 0o700, dir: true},
		{name: "var/log/apt", mode: 0o755, dir: true},
	}
}

// dpkgExcludes is a dpkg configuration leaving out debian.DefaultSkip.
func dpkgExcludes() string {
	var b strings.Builder
	for _, p := range debian.DefaultSkip() {
		fmt.Fprintf(&b, "path-exclude=/%s/*\n", p)
	}
	return b.String()
}

// pamCommon is what pam-auth-update writes for pam_unix alone.
var pamCommon = []struct{ name, data string }{
	{"common-auth", "auth\t[success=1 default=ignore]\tpam_unix.so nullok\n" +
		"auth\trequisite\tpam_deny.so\n" +
		"auth\trequired\tpam_permit.so\n"},
	{"common-account", "account\t[success=1 new_authtok_reqd=done default=ignore]\tpam_unix.so\n" +
		"account\trequisite\tpam_deny.so\n" +
		"account\trequired\tpam_permit.so\n"},
	{"common-password", "password\t[success=1 default=ignore]\tpam_unix.so obscure yescrypt\n" +
		"password\trequisite\tpam_deny.so\n" +
		"password\trequired\tpam_permit.so\n"},
	{"common-session", "session\t[default=1]\tpam_permit.so\n" +
		"session\trequisite\tpam_deny.so\n" +
		"session\trequired\tpam_permit.so\n" +
		"session\trequired\tpam_unix.so\n"},
	{"common-session-noninteractive", "session\t[default=1]\tpam_permit.so\n" +
		"session\trequisite\tpam_deny.so\n" +
		"session\trequired\tpam_permit.so\n" +
		"session\trequired\tpam_unix.so\n"},
}

// statusOrder is the order dpkg writes a status stanza's fields in; any
// other field follows, sorted.
var statusOrder = []string{
	"Package", "Status", "Essential", "Protected", "Priority", "Section", "Installed-Size",
	"Origin", "Maintainer", "Bugs", "Architecture", "Multi-Arch", "Source", "Version",
	"Replaces", "Provides", "Depends", "Pre-Depends", "Recommends", "Suggests", "Breaks",
	"Conflicts", "Enhances", "Conffiles", "Description", "Homepage",
}

// dpkgDatabase returns dpkg's record of the packages unpacked in the
// root: /var/lib/dpkg/status, each package's file list, and the empty
// files dpkg expects, so dpkg and apt in the guest see every package of
// the image as installed. controls are the packages' control fields and
// lists their file lists (see debian.TarBuilder.AddDebFiles), in the
// same order.
func dpkgDatabase(controls []map[string]string, lists [][]string) ([]entry, error) {
	return dpkgDatabaseWith(controls, lists, nil)
}

// dpkgDatabaseWith is dpkgDatabase with each package's md5sums and
// conffiles members of control.tar (extra, in the same order; nil for
// none): md5sums goes to /var/lib/dpkg/info, conffiles with their sums
// into the status's Conffiles, so dpkg keeps a changed one at an upgrade.
func dpkgDatabaseWith(controls []map[string]string, lists [][]string, extra []map[string][]byte) ([]entry, error) {
	if extra != nil && len(extra) != len(controls) {
		return nil, fmt.Errorf("dpkg database: %d control files for %d control members", len(controls), len(extra))
	}
	if len(controls) != len(lists) {
		return nil, fmt.Errorf("dpkg database: %d control files for %d file lists", len(controls), len(lists))
	}
	type rec struct {
		name  string
		ctrl  map[string]string
		list  []string
		extra map[string][]byte
	}
	recs := make([]rec, len(controls))
	for i, c := range controls {
		if c["Package"] == "" || c["Version"] == "" || c["Architecture"] == "" {
			return nil, fmt.Errorf("dpkg database: a package's control file lacks Package, Version or Architecture")
		}
		r := rec{name: c["Package"], ctrl: c, list: lists[i]}
		if extra != nil {
			r.extra = extra[i]
		}
		if cf := conffiles(r.extra); cf != "" {
			r.ctrl = maps.Clone(c)
			r.ctrl["Conffiles"] = cf
		}
		recs[i] = r
	}
	slices.SortFunc(recs, func(a, b rec) int { return strings.Compare(a.name, b.name) })
	var status strings.Builder
	es := []entry{}
	for _, r := range recs {
		c := r.ctrl
		writeField := func(k, v string) {
			lines := strings.Split(v, "\n")
			if lines[0] == "" {
				fmt.Fprintf(&status, "%s:\n", k)
			} else {
				fmt.Fprintf(&status, "%s: %s\n", k, lines[0])
			}
			for _, l := range lines[1:] {
				if l == "" {
					l = "."
				}
				fmt.Fprintf(&status, " %s\n", l)
			}
		}
		for _, k := range statusOrder {
			switch {
			case k == "Status":
				writeField(k, "install ok installed")
			case c[k] != "":
				writeField(k, c[k])
			}
		}
		var rest []string
		for k := range c {
			if !slices.Contains(statusOrder, k) {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		for _, k := range rest {
			writeField(k, c[k])
		}
		status.WriteString("\n")

		// Multi-Arch: same packages are known by name and architecture.
		listName := r.name
		if c["Multi-Arch"] == "same" {
			listName += ":" + c["Architecture"]
		}
		if sums, ok := r.extra["md5sums"]; ok {
			es = append(es, entry{name: path.Join("var/lib/dpkg/info", listName+".md5sums"), mode: 0o644, data: sums})
		}
		es = append(es, entry{
			name: path.Join("var/lib/dpkg/info", listName+".list"),
			mode: 0o644,
			data: []byte(strings.Join(r.list, "\n") + "\n"),
		})
	}
	es = append(es,
		entry{name: "var/lib/dpkg/status", mode: 0o644, data: []byte(status.String())},
		// The multiarch layout, where Multi-Arch: same packages' files are
		// info/<name>:<arch>.*; without it dpkg reads the old one.
		entry{name: "var/lib/dpkg/info/format", mode: 0o644, data: []byte("1\n")},
		entry{name: "var/lib/dpkg/available", mode: 0o644, data: []byte{}},
		entry{name: "var/lib/dpkg/diversions", mode: 0o644, data: []byte{}},
		entry{name: "var/lib/dpkg/statoverride", mode: 0o644, data: []byte{}},
	)
	return es, nil
}

// conffiles is the status's Conffiles value for a package's control
// members: each conffile with its sum from md5sums, "\n"-joined with an
// empty first line; "" when it has none.
func conffiles(members map[string][]byte) string {
	if len(members["conffiles"]) == 0 {
		return ""
	}
	sums := map[string]string{}
	for _, l := range strings.Split(string(members["md5sums"]), "\n") {
		if sum, file, ok := strings.Cut(strings.TrimSpace(l), "  "); ok {
			sums["/"+strings.TrimPrefix(file, "/")] = sum
		}
	}
	var b strings.Builder
	for _, l := range strings.Split(string(members["conffiles"]), "\n") {
		f := strings.TrimSpace(l)
		// "remove-on-upgrade /etc/x" and the like: not a file dpkg sums.
		if f == "" || !strings.HasPrefix(f, "/") {
			continue
		}
		sum, ok := sums[f]
		if !ok {
			sum = "newconffile"
		}
		fmt.Fprintf(&b, "\n%s %s", f, sum)
	}
	return b.String()
}
