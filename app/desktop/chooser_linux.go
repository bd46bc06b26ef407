package desktop

// FolderChooser is this desktop's folder chooser: the XDG desktop
// portal on the session bus.
func FolderChooser() ChooseFolder {
	return Portal{Connect: SessionBus}.ChooseFolder
}
