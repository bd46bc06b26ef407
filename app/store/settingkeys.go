package store

// SettingKey names one of Sandbar's own settings (Store.Setting). Every
// key any part reads is declared here, once.
type SettingKey string

// Settings keys.
const (
	// SettingDefaultCPUs, SettingDefaultMemoryMiB and SettingDefaultDiskGiB
	// are a new session's limits when it asks for none (whole numbers).
	SettingDefaultCPUs      SettingKey = "default_cpus"
	SettingDefaultMemoryMiB SettingKey = "default_memory_mib"
	SettingDefaultDiskGiB   SettingKey = "default_disk_gib"
	// SettingDefaultAgent is a shell command a new session runs as its
	// agent; empty: Claude Code.
	SettingDefaultAgent SettingKey = "default_agent"
	// SettingMemoryBudget is the share of host memory sessions may use,
	// 0 < x ≤ 1.
	SettingMemoryBudget SettingKey = "memory_budget"
	// SettingNetwork is Sandbar's own network rules (app/net/policy's
	// syntax), under every project's.
	SettingNetwork SettingKey = "network"
	// SettingAnthropicUpstream is where the model-API broker sends the
	// agent's requests (an http(s) URL); empty: the real API.
	SettingAnthropicUpstream SettingKey = "anthropic_upstream"
	// SettingPublishPorts is "off" to publish only the ports a person
	// asks for, not every port the guest listens on.
	SettingPublishPorts SettingKey = "publish_ports"
	// SettingLogWindow bounds the log lines kept per session (see
	// DefaultLogWindow); the store itself reads it.
	SettingLogWindow SettingKey = "log_window"
	// SettingAutoCommit is "off" to leave a session's uncommitted work
	// uncommitted when it ends; otherwise Sandbar commits it on the
	// session's branch, with the prompt as the message.
	SettingAutoCommit SettingKey = "auto_commit"
	// SettingHostCerts is "off" to keep the CA certificates this machine
	// trusts beyond the stock bundle (app/net/hosttrust) out of new
	// sessions; otherwise each session's VM trusts them too.
	SettingHostCerts SettingKey = "host_certs"
	// SettingDiskFloorMiB is the free space, in MiB, the disk holding
	// Sandbar's data must have for a session to start, and at which a
	// session paused on a full disk resumes by itself (whole number;
	// default session.DefaultDiskFloorMiB).
	SettingDiskFloorMiB SettingKey = "disk_floor_mib"
	// SettingKeepSessions is what quitting the engine does with the
	// sessions it runs: "resume" suspends them and the next engine
	// resumes them, "suspended" suspends them and leaves them suspended
	// (each with its Resume), and anything else ("stop", the default)
	// saves their work and stops them.
	SettingKeepSessions SettingKey = "keep_sessions"
	// SettingAutoSuspend is how long a session may wait for the person
	// before it is suspended: whole minutes ("15"), a Go duration
	// ("90s"), or "off"; default session.DefaultAutoSuspend.
	SettingAutoSuspend SettingKey = "auto_suspend"
)
