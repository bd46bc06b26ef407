package config

// Byte caps on what one session's output may cost on the host's disk.
// Each is the most that output keeps; past it the oldest part goes
// first, and the window and `sandbar logs` say "earlier output trimmed".
// The sum is what a session's logs can take at most, however fast the
// guest writes (README's "Bounded on disk" states them).
//
// A file cap holds for the file and its one older copy together (name
// and name.1): the file rotates at half the cap, replacing the older
// copy.
const (
	// ConsoleLogMax caps console.log, the VM's serial console, which
	// Sandbar reads through a pipe and writes itself (root in the guest
	// can write it as fast as the emulated CPU runs).
	ConsoleLogMax = 8 << 20
	// AgentLogMax caps agent.log, every line of the session's log as
	// written, beside the store's window of it.
	AgentLogMax = 32 << 20
	// StoredLogMax caps the text of a session's log lines in the
	// database (sandbar.db), besides their count (store.DefaultLogWindow).
	StoredLogMax = 16 << 20
	// TranscriptMax caps transcript.jsonl, a Claude Code session's
	// conversation.
	TranscriptMax = 32 << 20
)
