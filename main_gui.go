package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	fynedesktop "fyne.io/fyne/v2/driver/desktop"
	"fyne.io/systray"

	"sandbar/app/cli"
	"sandbar/app/config"
	"sandbar/app/desktop"
	"sandbar/app/doctor"
	"sandbar/app/engine"
	"sandbar/app/hostsleep"
	"sandbar/app/session"
	"sandbar/app/ui"
	"sandbar/assets"
)

// appID is the app's identity to the desktop (FyneApp.toml's ID): its
// preferences folder, notifications' sender, the macOS bundle id.
const appID = "dev.sandbar.app"

// appName is what the desktop calls the app: the tray's title on Linux,
// notifications' sender (FyneApp.toml's Name).
const appName = "Sandbar"

// appMetadata is what FyneApp.toml says of the app. Only `fyne package`
// compiles that file in; a binary of plain `go build` has no metadata, and
// Fyne's tray then titles itself with the app's id, "dev.sandbar.app".
func appMetadata() fyne.AppMetadata {
	return fyne.AppMetadata{ID: appID, Name: appName, Version: version, Build: 1}
}

// runGUI runs the menu-bar app over env's data directory until the
// person quits: it builds the real session manager, becomes the data
// directory's engine (CLI commands then reach its sessions), and hands
// the manager to the windows and the tray. On the way out it stops the
// sessions it runs, gracefully.
//
// When another process is the engine already (`sandbar serve`, started
// by a CLI command, or another window), the app is its client instead:
// the windows and the tray show and drive the sessions that process runs
// (engine.Client), and quitting leaves them running there.
func runGUI(parent context.Context, p *parts, env *cli.Env) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	m, err := p.Manager(ctx)
	if err != nil {
		return err
	}
	st, err := p.Store()
	if err != nil {
		return err
	}
	sec, err := p.Secrets()
	if err != nil {
		return err
	}

	var backend session.Service = m
	eng, err := engine.Listen(ctx, p.paths, m, p.logger)
	switch {
	case err == nil:
	case errors.Is(err, engine.ErrRunning):
		p.logger.Info("another Sandbar process is the engine for this data folder: this one is its client", "home", p.paths.Home)
		backend = p.client(m)
	default:
		return err
	}

	desktop.PrepareMenuBarApp()
	app.SetMetadata(appMetadata())
	a := app.NewWithID(appID)
	a.SetIcon(assets.AppIcon)
	prefs := ui.NewPrefs(st, sec, p.images,
		&doctor.Doctor{Paths: p.paths, Hypervisors: p.hypervisors, Backend: p.backend})
	prefs.HostTrust = p.hostTrust
	u := ui.New(a, backend, prefs)
	if eng == nil {
		u.Notice = clientNotice(p.paths)
	}
	// What the engine adopted back at its start (or an engine before it,
	// unsaid yet) is said once, in the Sandbar window.
	if r, ok, err := st.TakeRecovered(ctx); err == nil && ok {
		u.Notice = strings.TrimSpace(u.Notice + " " + cli.RecoveredLine(r.IDs))
	}
	u.ScreenSize = desktop.ScreenSize
	u.ChooseFolder = desktop.FolderChooser()
	u.Home, _ = os.UserHomeDir()

	// Set on the UI goroutine (which, with Fyne's GLFW driver, is this
	// one once Run returns).
	var (
		tray     *ui.Tray
		notifier *ui.Notifier
	)
	var serving atomic.Bool
	served := make(chan error, 1)

	// stop ends the engine and stops the sessions, once: after the app's
	// loop ends, or earlier, off the UI goroutine, when the system asks
	// the app to terminate (see desktop.MenuBarApp).
	var (
		stopOnce sync.Once
		stopErr  error
	)
	var sleepWatch atomic.Pointer[hostsleep.Watch]
	stop := func() error {
		stopOnce.Do(func() {
			cancel() // the engine stops taking requests; it keeps its lock until the sessions are down
			if sw := sleepWatch.Load(); sw != nil {
				sw.Close() // no suspend for a sleep from here on: the quit decides
			}
			// Kept (suspended) or stopped as the person answered at
			// the quit, or as Settings say when nothing asked.
			closeErr := m.Quit(context.Background(), u.QuitPolicy(context.Background()), closeGrace)
			if eng != nil {
				if serving.Load() {
					<-served
				}
				eng.Close()
			}
			if closeErr != nil {
				stopErr = fmt.Errorf("stop the sessions: %w (their VMs were killed)", closeErr)
			}
		})
		return stopErr
	}
	// Without a tray host (some Linux desktops) there is no tray: then
	// closing the last window quits, as Fyne does for an app without one.
	desk, _ := a.(fynedesktop.App)
	if desk != nil && !desktop.TrayHost() {
		p.logger.Warn("this desktop shows no tray icons (no StatusNotifierWatcher on the session bus): Sandbar quits when its last window closes")
		desk = nil
	}
	// The tray first: Fyne starts a tray only if it has a menu when Run
	// begins.
	if desk != nil {
		tray = u.StartTray(desk, ui.TrayOptions{Template: runtime.GOOS == "darwin", Quit: a.Quit, Client: eng == nil,
			Tooltip: systray.SetTooltip})
	}
	a.Lifecycle().SetOnStarted(func() {
		err := desktop.MenuBarApp(func() {
			p.logger.Info("the system asks Sandbar to quit (a logout, restart or shutdown?): stopping the sessions")
			if err := stop(); err != nil {
				p.logger.Error("quit for the system", "err", err)
			}
		})
		if err != nil {
			p.logger.Warn("menu-bar app", "err", err)
		}
		if eng != nil {
			serving.Store(true)
			go func() { served <- eng.Serve(ctx) }()
			// The engine saves its sessions as the host goes to sleep.
			if sw, err := hostsleep.Start(ctx, hostsleep.Handler{
				Sleeping: func(ctx context.Context) { m.HostSleeping(ctx) },
				Woke:     func(ctx context.Context) { m.HostWoke(ctx) },
			}, p.logger); err != nil {
				p.logger.Info("sessions run on through the host's sleep", "err", err)
			} else {
				sleepWatch.Store(sw)
			}
		}
		notifier = u.StartNotifications(nil)
		// Not every Linux desktop shows tray icons: there the window is
		// the way in. On macOS the menu bar is, once there are projects.
		if runtime.GOOS != "darwin" {
			u.ShowMain()
		}
		u.ShowStartup()
	})

	// Fyne quits on the tray's Quit and on SIGINT and SIGTERM; main's
	// context ending must quit it too.
	ran := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-parent.Done():
			fyne.Do(a.Quit)
		case <-ran:
		}
	}()
	a.Run()
	close(ran)
	<-watched

	if tray != nil {
		tray.Stop()
	}
	if notifier != nil {
		notifier.Stop()
	}
	u.Close()
	return stop()
}

// clientNotice tells the person that another process, named by its pid
// when engine.lock holds it, runs the sessions this app shows.
func clientNotice(paths config.Paths) string {
	who := "Another Sandbar process"
	if b, err := os.ReadFile(paths.EngineLock()); err == nil {
		if pid := strings.TrimSpace(string(b)); pid != "" {
			who += " (pid " + pid + ")"
		}
	}
	return who + " runs the sessions of this data folder, " + paths.Home + ": this app shows and drives them there, and quitting it leaves them running."
}
