// Package secrets keeps the person's named secrets (ANTHROPIC_API_KEY,
// CLAUDE_CODE_OAUTH_TOKEN, GITHUB_TOKEN, or any name they choose) in the
// operating system's keyring: the macOS Keychain, or the Secret Service over
// D-Bus on Linux (gnome-keyring, KWallet), through
// github.com/zalando/go-keyring. It also redacts those values out of text
// and streams (Redactor), so an agent's output can be logged safely: a
// value is found raw, inside a JSON string as JavaScript, Go or Python
// escape it (also nested once, as in Claude Code's stream-json), and line
// by line when a value of several lines, such as a private key, was
// printed into a log. The Redactor finds what a program writes, not what a
// person or an agent means to hide: a value encoded some other way (base64,
// URL-escaped, cut short or reversed) is not found.
//
// A keyring can hold values but cannot list them, so the names are kept
// elsewhere, behind NameStore (the database, in Sandbar). Values live only
// in the keyring and in the memory of whoever asked for them: this package
// never writes a value to a log, an error, a panic or a disk.
//
// A failure wraps one of ErrNotFound, ErrLocked, ErrUnavailable, ErrBadName
// or ErrBadValue (checked with errors.Is), except a cancelled context, a
// NameStore error, or a keyring refusal this package cannot place; its
// message says what to do next.
//
// It is not a general keyring library: it stores strings under one service
// name, one per secret name, and nothing else.
package secrets
