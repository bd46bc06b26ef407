//go:build !linux && !darwin

package desktop

// FolderChooser is nil here: there is no desktop chooser Sandbar knows
// how to ask, and callers use their own.
func FolderChooser() ChooseFolder { return nil }
