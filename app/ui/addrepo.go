package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/desktop"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// addRoute is how a person gave Sandbar a folder: the fix an error
// suggests is said the same way ("drop", "choose", "type").
type addRoute int

const (
	routeDrop    addRoute = iota // dropped on a window
	routeChooser                 // picked in the desktop's folder chooser
	routeTyped                   // typed, or picked from recent folders, in Add a Repository
)

// give is what the person does, this way, to give a folder: "drop the
// folder that holds .git".
func (r addRoute) give() string {
	switch r {
	case routeChooser:
		return "choose"
	case routeTyped:
		return "type the path of"
	}
	return "drop"
}

// recentFoldersKey is the preference holding recent folders, newest
// first; maxRecentFolders how many are kept.
const (
	recentFoldersKey = "addRepository.recent"
	maxRecentFolders = 10
)

// folderChooserTitle is the desktop chooser's title.
const folderChooserTitle = "Add a repository to Sandbar"

// addRepoState is what the ways of adding a repository keep between
// clicks.
type addRepoState struct {
	win      *addRepoWindow // Add a Repository, while open
	choosing bool           // the desktop's chooser is up
	// noPortal: the desktop's chooser did not answer, so Choose Folder…
	// opens Sandbar's own folder browser instead of asking it again.
	noPortal bool
}

// AddRepository asks for a repository's folder in the desktop's own
// chooser and adds it, handing what happened to report (on the UI
// goroutine). Where the desktop has no chooser, or it does not answer
// within a few seconds, Add a Repository (a typed path and recent
// folders) opens instead.
func (u *UI) AddRepository(report func(addResult)) {
	if u.ChooseFolder == nil {
		u.ShowAddByPath(report, "")
		return
	}
	if u.addRepo.choosing {
		return // the chooser is up already; the desktop keeps it in front
	}
	u.addRepo.choosing = true
	choose := u.ChooseFolder
	u.background(func(ctx context.Context) {
		path, err := choose(ctx, folderChooserTitle)
		u.post(func() {
			u.addRepo.choosing = false
			switch {
			case err == nil:
				u.addFolders(routeChooser, []string{path}, report)
			case errors.Is(err, desktop.ErrCanceled), ctx.Err() != nil:
			case errors.Is(err, desktop.ErrUnavailable):
				slog.Info("no desktop folder chooser", "err", err)
				u.addRepo.noPortal = true
				u.ShowAddByPath(report, "The desktop's folder chooser did not answer: type the repository's path, pick a recent folder, or browse with Choose Folder….")
			default: // it answered with something Sandbar cannot use
				report(addResult{problems: []string{sentence(err.Error())}})
			}
		})
	})
}

// addProjects adds each dropped folder as a project, off the UI
// goroutine, and hands what happened to done on it. Only local folders
// are tried.
func (u *UI) addProjects(uris []fyne.URI, done func(addResult)) {
	var paths, problems []string
	for _, uri := range uris {
		switch {
		case uri == nil:
		case uri.Scheme() != "file":
			problems = append(problems, fmt.Sprintf("%s is not a folder on this computer: drop a local repository folder.", uri.String()))
		default:
			paths = append(paths, uri.Path())
		}
	}
	if len(uris) == 0 {
		problems = append(problems, "Nothing was dropped that Sandbar can use: drop a repository folder.")
	}
	u.addFolders(routeDrop, paths, func(r addResult) {
		r.problems = append(problems, r.problems...)
		done(r)
	})
}

// addFolders adds each folder as a project, off the UI goroutine, and
// hands what happened to done on it, with each refusal worded for route.
// Each folder is remembered among the recent ones: a project's, and one
// that exists but was refused (to try again after `git init`).
func (u *UI) addFolders(route addRoute, paths []string, done func(addResult)) {
	home := u.Home
	u.background(func(ctx context.Context) {
		var r addResult
		var tried []string
		for _, path := range paths {
			p, note, err := u.Backend.AddProject(ctx, path)
			switch {
			case err != nil:
				r.problems = append(r.problems, addProblem(route, path, home, err))
				if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
					tried = append(tried, path)
				}
			default:
				r.added = append(r.added, p)
				tried = append(tried, p.Path)
				if note != "" {
					r.notes = append(r.notes, sentence(note))
				}
			}
		}
		u.post(func() {
			for _, p := range tried {
				u.rememberFolder(p)
			}
			done(r)
		})
	})
}

// addProblem says why path is not a project, with the fix worded for how
// it was given. Reasons that do not depend on it (a project already, no
// commits, another user's) are the backend's own words.
func addProblem(route addRoute, path, home string, err error) string {
	shown := tildePath(path, home)
	give := route.give()
	switch {
	case errors.Is(err, workspace.ErrBareRepo):
		return fmt.Sprintf("%s is a bare repository, with no working tree: %s a clone of it instead.", shown, give)
	case !errors.Is(err, workspace.ErrNotRepo) || errors.Is(err, workspace.ErrNotTrusted):
		return sentence(err.Error())
	}
	fi, serr := os.Stat(path)
	switch {
	case errors.Is(serr, os.ErrNotExist) && route == routeTyped:
		return fmt.Sprintf("%s does not exist: check the path (its folders are listed as you type).", shown)
	case errors.Is(serr, os.ErrNotExist):
		return fmt.Sprintf("%s does not exist any more: %s the folder where it is now.", shown, give)
	case serr == nil && !fi.IsDir():
		return fmt.Sprintf("%s is a file, not a folder: %s the repository's folder.", shown, give)
	case slices.Contains(strings.Split(filepath.ToSlash(path), "/"), ".git"):
		return fmt.Sprintf("%s is inside a repository's .git folder: %s the folder that holds .git.", shown, give)
	}
	return fmt.Sprintf("%s is not a git repository: %s the folder that holds .git, or run git init there.", shown, give)
}

// recentFolders are the folders added or tried, newest first.
func (u *UI) recentFolders() []string {
	return u.App.Preferences().StringList(recentFoldersKey)
}

// rememberFolder puts path first among the recent folders.
func (u *UI) rememberFolder(path string) {
	path = filepath.Clean(path)
	rs := slices.DeleteFunc(u.recentFolders(), func(p string) bool { return p == path })
	rs = append([]string{path}, rs...)
	if len(rs) > maxRecentFolders {
		rs = rs[:maxRecentFolders]
	}
	u.App.Preferences().SetStringList(recentFoldersKey, rs)
}

// knownProject reports whether path is a project's folder.
func knownProject(ps []store.Project, path string) bool {
	return slices.ContainsFunc(ps, func(p store.Project) bool { return p.Path == path })
}

// addButton is Welcome's Add Repository…, for a person who would rather
// pick than drop.
func (w *firstRunWindow) addButton() *widget.Button {
	return widget.NewButtonWithIcon("Add Repository…", theme.FolderOpenIcon(), func() { w.u.AddRepository(w.added) })
}
