package desktop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

// The XDG desktop portal's names (see the FileChooser and Request pages
// of flatpak.github.io/xdg-desktop-portal).
const (
	portalName   = "org.freedesktop.portal.Desktop"
	portalPath   = "/org/freedesktop/portal/desktop"
	fileChooser  = "org.freedesktop.portal.FileChooser"
	portalReqIfc = "org.freedesktop.portal.Request"
)

// DefaultPortalAnswer is how long the portal may take to take the call
// (not the person to choose) before the desktop counts as having no
// chooser: long enough for D-Bus to start xdg-desktop-portal, short
// enough that a desktop without one falls back at once to a person's eye.
const DefaultPortalAnswer = 3 * time.Second

// Portal asks for a folder through the XDG desktop portal's FileChooser:
// OpenFile with "directory", then the Request's Response signal, whose
// "uris" are file:// URIs. It works wherever xdg-desktop-portal runs with
// a backend (GNOME, KDE, wlroots, ...), and shows the desktop's own
// dialog, with its bookmarks, typed paths and recent places.
type Portal struct {
	// Connect opens a connection to the session bus that lives until ctx
	// ends; ChooseFolder closes it when done.
	Connect func(ctx context.Context) (*dbus.Conn, error)
	// Answer bounds the wait for the portal to take the call (0:
	// DefaultPortalAnswer). Past it, ChooseFolder returns ErrUnavailable.
	Answer time.Duration
}

// ChooseFolder asks for one folder. It returns ErrUnavailable (wrapped,
// with why) when there is no session bus, no portal on it, no FileChooser
// behind it or no answer in time; ErrCanceled when the person closes the
// dialog. When ctx ends first the dialog is closed.
func (p Portal) ChooseFolder(ctx context.Context, title string) (string, error) {
	answer := p.Answer
	if answer <= 0 {
		answer = DefaultPortalAnswer
	}
	callCtx, cancel := context.WithTimeout(ctx, answer)
	defer cancel()
	unavailable := func(what string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
	}

	// The connection lives until this returns (godbus closes one whose
	// context ends), past ctx: a dialog left open is closed over it.
	connCtx, connDone := context.WithCancel(context.WithoutCancel(ctx))
	defer connDone()
	conn, err := p.Connect(connCtx)
	if err != nil {
		return "", unavailable("connect to the session bus", err)
	}
	defer conn.Close()

	// Listen before calling, so that an answer quicker than the call's
	// reply is not missed; the handle_token makes the request's path one
	// this connection can tell from another app's.
	if err := conn.AddMatchSignalContext(callCtx, dbus.WithMatchInterface(portalReqIfc), dbus.WithMatchMember("Response")); err != nil {
		return "", unavailable("listen for the portal's answer", err)
	}
	sigs := make(chan *dbus.Signal, 8)
	conn.Signal(sigs)
	defer conn.RemoveSignal(sigs)

	token, err := handleToken()
	if err != nil {
		return "", err
	}
	opts := map[string]dbus.Variant{
		"handle_token": dbus.MakeVariant(token),
		"directory":    dbus.MakeVariant(true),
		"modal":        dbus.MakeVariant(true),
		"multiple":     dbus.MakeVariant(false),
	}
	var handle dbus.ObjectPath
	call := conn.Object(portalName, portalPath).CallWithContext(callCtx, fileChooser+".OpenFile", 0, "", title, opts)
	if err := call.Store(&handle); err != nil {
		if ctx.Err() != nil {
			// Given up while the portal was taking the call: its dialog
			// may be up already, at the path the token predicts.
			closeRequest(conn, requestPath(conn, token))
		}
		return "", unavailable("ask "+portalName+" for a folder", err)
	}

	for {
		select {
		case <-ctx.Done():
			closeRequest(conn, handle)
			return "", ctx.Err()
		case s, ok := <-sigs:
			if !ok {
				return "", fmt.Errorf("%w: the session bus closed while the chooser was open", ErrUnavailable)
			}
			if s.Path != handle || s.Name != portalReqIfc+".Response" {
				continue
			}
			return folderFromResponse(s.Body)
		}
	}
}

// folderFromResponse reads a Response signal's body: (u response,
// a{sv} results). 0 is success, 1 a cancel, 2 "ended some other way".
func folderFromResponse(body []any) (string, error) {
	if len(body) < 2 {
		return "", fmt.Errorf("%w: the portal's answer has %d values, not 2", ErrUnavailable, len(body))
	}
	code, _ := body[0].(uint32)
	switch code {
	case 0:
	case 1:
		return "", ErrCanceled
	default:
		return "", fmt.Errorf("%w: the chooser ended without an answer (response %d)", ErrUnavailable, code)
	}
	results, _ := body[1].(map[string]dbus.Variant)
	uris, _ := results["uris"].Value().([]string)
	if len(uris) == 0 {
		return "", ErrCanceled
	}
	return localPath(uris[0])
}

// localPath turns a file:// URI into a path.
func localPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("the chooser answered %q, which is not a URI: %w", uri, err)
	}
	if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", fmt.Errorf("the chooser gave %s, which is not a folder on this computer: choose a local folder", uri)
	}
	return u.Path, nil
}

// closeRequest closes the dialog of a request no one waits for any more.
func closeRequest(conn *dbus.Conn, handle dbus.ObjectPath) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn.Object(portalName, handle).CallWithContext(ctx, portalReqIfc+".Close", 0)
}

// requestPath is where the portal puts the request made with token by
// conn: the caller's unique name without its ':' and with '_' for '.'.
func requestPath(conn *dbus.Conn, token string) dbus.ObjectPath {
	var sender string
	if names := conn.Names(); len(names) > 0 {
		sender = strings.ReplaceAll(strings.TrimPrefix(names[0], ":"), ".", "_")
	}
	return dbus.ObjectPath(portalPath + "/request/" + sender + "/" + token)
}

// handleToken is a fresh request token: letters, digits and _ only, as an
// object path element must be.
func handleToken() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a portal request token: %w", err)
	}
	return "sandbar_" + hex.EncodeToString(b), nil
}

// SessionBus connects to the session bus godbus finds from the
// environment (DBUS_SESSION_BUS_ADDRESS), as main's other D-Bus users do,
// for as long as ctx lasts.
func SessionBus(ctx context.Context) (*dbus.Conn, error) {
	return dbus.ConnectSessionBus(dbus.WithContext(ctx))
}
