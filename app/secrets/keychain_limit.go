package secrets

import (
	"regexp"
	"strings"
)

// keychainMaxValueLen is the largest value go-keyring (v0.2.8) can store in
// the macOS Keychain under service and name. It writes
//
//	add-generic-password -U -s SERVICE -a NAME -w go-keyring-base64:BASE64\n
//
// to `security -i`, each word quoted by its internal shellescape.Quote, and
// refuses a line over 4096 bytes. It is here, not in keyring_darwin.go, so
// that its arithmetic is tested on every platform.
func keychainMaxValueLen(service, name string) int {
	fixed := len("add-generic-password -U -s ") + len(shellQuote(service)) +
		len(" -a ") + len(shellQuote(name)) + len(" -w ") + len("go-keyring-base64:") + len("\n")
	room := 4096 - fixed
	if room < 4 {
		return 0
	}
	// base64 turns every 3 bytes (or part of 3) into 4.
	return min(room/4*3, MaxValueLen)
}

// shellQuote is go-keyring's internal/shellescape.Quote.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if unsafeShell.MatchString(s) {
		return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
	}
	return s
}

var unsafeShell = regexp.MustCompile(`[^\w@%+=:,./-]`)
