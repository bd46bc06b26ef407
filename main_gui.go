package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/cli"
	"sandbar/app/secrets"
	"sandbar/app/session"
	"sandbar/app/ui"
	"sandbar/assets"
)

// appID is the app's identity to the desktop (FyneApp.toml's ID): its
// preferences folder, notifications' sender, the macOS bundle id.
const appID = "dev.sandbar.app"

// closeGrace bounds how long quitting waits for sessions to stop.
const closeGrace = 30 * time.Second

// runGUI runs the menu-bar app over env's data directory until the
// person quits: it builds the real session manager, becomes the data
// directory's engine (CLI commands then reach its sessions), and hands
// the manager to the windows and the tray. On the way out it stops the
// sessions it runs, gracefully.
func runGUI(parent context.Context, env *cli.Env) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	m, st, err := cli.OpenManager(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()

	a := app.NewWithID(appID)
	a.SetIcon(assets.AppIcon)
	u := ui.New(a, m, ui.NewPrefs(st, secrets.New(st, secrets.Options{}), env))

	// Set on the UI goroutine (which, with Fyne's GLFW driver, is this
	// one once Run returns).
	var (
		eng      *session.Engine
		tray     *ui.Tray
		notifier *ui.Notifier
	)
	served := make(chan error, 1)
	// Without a tray host (some Linux desktops) there is no tray: then
	// closing the last window quits, as Fyne does for an app without one.
	desk, _ := a.(desktop.App)
	if desk != nil && !trayHost() {
		env.Logger.Warn("this desktop shows no tray icons (no StatusNotifierWatcher on the session bus): Sandbar quits when its last window closes")
		desk = nil
	}
	startTray := func() {
		if desk != nil {
			tray = u.StartTray(desk, ui.TrayOptions{Template: runtime.GOOS == "darwin", Quit: a.Quit})
		}
	}
	begin := func(e *session.Engine) {
		eng = e
		go func() { served <- e.Serve(ctx) }()
		notifier = u.StartNotifications(nil)
		// Not every Linux desktop shows tray icons: there the window is
		// the way in. On macOS the menu bar is, once there are projects.
		if runtime.GOOS != "darwin" {
			u.ShowMain()
		}
		u.ShowStartup()
	}

	// waiting ends once the engine was got (or not) while another
	// process held it; late holds an engine got as the app was quitting.
	waiting := make(chan struct{})
	var late *session.Engine
	e, err := session.Listen(m)
	switch {
	case err == nil:
		close(waiting)
		// The tray first: Fyne starts a tray only if it has a menu when
		// Run begins.
		startTray()
		a.Lifecycle().SetOnStarted(func() { begin(e) })
	case errors.Is(err, session.ErrEngineRunning):
		// A headless engine (`sandbar serve`, started by a CLI command)
		// exits a minute after its last session; another GUI does not.
		// Either way this one says so, waits, and starts when it can.
		wait := waitWindow(a, env)
		a.Lifecycle().SetOnStarted(wait.Show)
		if desk != nil {
			note := fyne.NewMenuItem("Waiting for another Sandbar to finish…", nil)
			note.Disabled = true
			desk.SetSystemTrayMenu(fyne.NewMenu("Sandbar", note, fyne.NewMenuItem("Quit", a.Quit)))
		}
		go func() {
			defer close(waiting)
			tick := time.NewTicker(2 * time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				e, err := session.Listen(m)
				if errors.Is(err, session.ErrEngineRunning) {
					continue
				}
				if ctx.Err() != nil {
					late = e
					return
				}
				fyne.Do(func() {
					// The new windows first: closing the last window quits.
					defer wait.Close()
					if err != nil {
						showFatal(a, fmt.Sprintf("Sandbar cannot serve its data folder %s: %v", env.Paths.Home, err))
						return
					}
					startTray()
					begin(e)
				})
				return
			}
		}()
	default:
		return err
	}

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
	cancel() // the engine stops taking requests; it keeps its lock until the sessions are down
	<-waiting
	if late != nil {
		late.Close()
	}
	cctx, ccancel := context.WithTimeout(context.Background(), closeGrace)
	defer ccancel()
	closeErr := m.Close(cctx)
	if eng != nil {
		<-served
		eng.Close()
	}
	if closeErr != nil {
		return fmt.Errorf("stop the sessions: %w (their VMs were killed)", closeErr)
	}
	return nil
}

// waitWindow says that another Sandbar process is the engine for this
// data directory, with its pid when known.
func waitWindow(a fyne.App, env *cli.Env) fyne.Window {
	who := "Another Sandbar"
	if b, err := os.ReadFile(filepath.Join(env.Paths.Home, "engine.lock")); err == nil {
		if pid := strings.TrimSpace(string(b)); pid != "" {
			who += " (pid " + pid + ")"
		}
	}
	w := a.NewWindow("Sandbar")
	msg := widget.NewLabel(who + " is running sessions for this data folder:\n" + env.Paths.Home +
		"\n\nQuit it, or wait for its sessions to end (a background engine exits a minute after its last one). " +
		"Sandbar starts here as soon as it can.")
	msg.Wrapping = fyne.TextWrapWord
	bar := widget.NewProgressBarInfinite()
	quit := widget.NewButton("Quit", a.Quit)
	w.SetContent(container.NewBorder(nil, container.NewHBox(layout.NewSpacer(), quit), nil, nil,
		container.NewVBox(msg, bar)))
	w.Resize(fyne.NewSize(480, 200))
	w.SetCloseIntercept(a.Quit)
	return w
}

// showFatal shows an error that leaves nothing to do but quit.
func showFatal(a fyne.App, text string) {
	w := a.NewWindow("Sandbar")
	msg := widget.NewLabel(text)
	msg.Wrapping = fyne.TextWrapWord
	w.SetContent(container.NewBorder(nil, container.NewHBox(layout.NewSpacer(), widget.NewButton("Quit", a.Quit)), nil, nil, msg))
	w.Resize(fyne.NewSize(480, 160))
	w.SetCloseIntercept(a.Quit)
	w.Show()
}
