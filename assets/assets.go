// Package assets holds Sandbar's app icon and its tray (menu bar) icons,
// embedded in the binary as fyne.Resource values.
//
// The PNG files here are generated, not drawn by hand: the drawing is Go
// code in internal/icons, and
//
//	go generate ./assets
//
// rewrites every file. The tests fail when a file differs from what the
// code draws, so change the code and regenerate rather than editing a PNG.
// FyneApp.toml points at icon.png; icon-256.png is the size a Linux
// desktop entry wants, and is not embedded.
package assets

//go:generate go run ./gen

import (
	_ "embed"
	"strconv"

	"fyne.io/fyne/v2"
)

var (
	//go:embed icon.png
	iconPNG []byte
	//go:embed tray-idle.png
	trayIdlePNG []byte
	//go:embed tray-running.png
	trayRunningPNG []byte
	//go:embed tray-attention.png
	trayAttentionPNG []byte
	//go:embed tray-idle-color.png
	trayIdleColorPNG []byte
	//go:embed tray-running-color.png
	trayRunningColorPNG []byte
	//go:embed tray-attention-color.png
	trayAttentionColorPNG []byte
)

// AppIcon is the 1024×1024 app icon: a white box with a ">_" prompt on a
// beach of teal water and sand, cut to the macOS rounded square. Use it
// for fyne.App.SetIcon and window icons.
var AppIcon fyne.Resource = fyne.NewStaticResource("icon.png", iconPNG)

// The tray icons are 44×44 pixels (22 points at 2×): a box with a prompt
// (the VM) above a wave. The plain ones are macOS template images, black
// on transparent, which the menu bar recolours for light, dark and
// highlighted states; only their alpha counts. The Color ones are mid grey
// with an orange badge, for Linux trays, which show an icon as it is.
var (
	// TrayIdle is the template icon for no session running: the glyph in
	// outline.
	TrayIdle fyne.Resource = fyne.NewStaticResource("tray-idle.png", trayIdlePNG)
	// TrayRunning is the template icon for at least one session working:
	// the box filled.
	TrayRunning fyne.Resource = fyne.NewStaticResource("tray-running.png", trayRunningPNG)
	// TrayAttention is the template icon for a session that needs the
	// person: waiting for input, finished or failed. The outline glyph
	// with a dot at its top right.
	TrayAttention fyne.Resource = fyne.NewStaticResource("tray-attention.png", trayAttentionPNG)

	// TrayIdleColor is TrayIdle in mid grey.
	TrayIdleColor fyne.Resource = fyne.NewStaticResource("tray-idle-color.png", trayIdleColorPNG)
	// TrayRunningColor is TrayRunning in mid grey.
	TrayRunningColor fyne.Resource = fyne.NewStaticResource("tray-running-color.png", trayRunningColorPNG)
	// TrayAttentionColor is TrayAttention in mid grey with an orange dot.
	TrayAttentionColor fyne.Resource = fyne.NewStaticResource("tray-attention-color.png", trayAttentionColorPNG)
)

// TrayState is what the tray icon says about all sessions together.
type TrayState int

// The tray states, from least to most in need of the person.
const (
	// Idle: no session is running.
	Idle TrayState = iota
	// Running: at least one session is working and none needs the person.
	Running
	// Attention: at least one session waits for input, has finished or
	// has failed.
	Attention
)

// String is the state's name: "idle", "running" or "attention".
func (s TrayState) String() string {
	switch s {
	case Idle:
		return "idle"
	case Running:
		return "running"
	case Attention:
		return "attention"
	}
	return "TrayState(" + strconv.Itoa(int(s)) + ")"
}

// Tray is the tray icon for a state: the macOS template image when
// template is true, the coloured one for Linux trays otherwise. A state
// out of range gets the Idle icon.
//
// Fyne v2.8.1 asks the menu bar to treat an icon as a template only when
// the resource given to SetSystemTrayIcon is a *theme.ThemedResource;
// a plain resource, such as those returned here, is shown as drawn.
func Tray(state TrayState, template bool) fyne.Resource {
	switch {
	case state == Running && template:
		return TrayRunning
	case state == Running:
		return TrayRunningColor
	case state == Attention && template:
		return TrayAttention
	case state == Attention:
		return TrayAttentionColor
	case template:
		return TrayIdle
	}
	return TrayIdleColor
}
