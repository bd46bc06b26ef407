package workspace

// NetworkFile is the repository's network rules for its sessions (see
// app/net/policy), relative to its root: one of its settings files
// (SettingsNetwork), used only once the person trusts it.
const NetworkFile = ".sandbar/network"
