package protocol

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Command is one host→guest message. It is flat: each command uses the
// fields its comment names and leaves the others empty.
type Command struct {
	Cmd string `json:"cmd"`
	ID  string `json:"id,omitempty"`

	// start
	Workdir       string            `json:"workdir,omitempty"`
	Branch        string            `json:"branch,omitempty"`
	Agent         *Agent            `json:"agent,omitempty"`
	Git           *GitIdentity      `json:"git,omitempty"`
	StatsInterval int64             `json:"stats_interval,omitempty"` // ms
	Env           map[string]string `json:"env,omitempty"`            // start, exec; secrets travel only here
	// CACert is the CA certificates for the guest to trust, in PEM
	// (CERTIFICATE blocks only, at most MaxCACerts of them in MaxCACert
	// bytes): Sandbar's own and the host's (see the package comment).
	CACert string `json:"ca_cert,omitempty"`
	// NoSudo takes sudo away from the agent user: the project's setting
	// is off. Sudo (NOPASSWD, inside the VM only) is on unless a start
	// says otherwise; each start sets it anew.
	NoSudo bool `json:"no_sudo,omitempty"`
	// Prepare makes a start do everything but start the agent: the
	// clock, the user, git, the trusted certificates, sudo and the
	// branch; agent:prepared answers it. Execs that follow get the
	// start's environment, so an environment's setup commands run as
	// the agent will; a start without prepare then starts the agent.
	Prepare bool `json:"prepare,omitempty"`
	// Image is the configuration of the image whose root the guest runs
	// on, when it is not Sandbar's own (see ImageConfig).
	Image *ImageConfig `json:"image,omitempty"`

	// start, settime: host wall clock in Unix nanoseconds; 0 means unset.
	Time int64 `json:"time,omitempty"`

	// chat
	Text string `json:"text,omitempty"`

	// stop
	Grace int64 `json:"grace,omitempty"` // ms

	// exec
	Argv    []string `json:"argv,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	User    string   `json:"user,omitempty"`
	Timeout int64    `json:"timeout,omitempty"` // ms, 0 = none
	// Stdin is written to the exec's stdin, then closed; without it the
	// exec reads /dev/null. Bytes that are not UTF-8 travel in StdinB64
	// instead (see SetStdin).
	Stdin    string `json:"stdin,omitempty"`     // exec, exec:stdin
	StdinB64 []byte `json:"stdin_b64,omitempty"` // exec, exec:stdin
	// PTY runs the exec on a new pseudo-terminal (its stdin, stdout and
	// stderr; output comes as exec:stdout), sized Rows×Cols (default
	// 24×80) with TERM set to Term (default xterm-256color). Its stdin
	// stays open for exec:stdin.
	PTY  bool   `json:"pty,omitempty"`
	Rows int    `json:"rows,omitempty"` // exec with pty, exec:resize
	Cols int    `json:"cols,omitempty"` // exec with pty, exec:resize
	Term string `json:"term,omitempty"`
	// StdinOpen keeps a pipe exec's stdin open after Stdin, for
	// exec:stdin.
	StdinOpen bool `json:"stdin_open,omitempty"`
	// Tools runs the exec with Sandbar's own tools: in Sandbar's own
	// root (its sh, git and the rest) with the session's /workspace,
	// /home and /tmp, whatever image the agent's root is. On Sandbar's
	// own image that root is the root itself. Saves, changes and diffs
	// ask for it, so an image without git (or with an old one) works.
	Tools bool `json:"tools,omitempty"`

	// exec:stdin: no more stdin follows. A pipe exec's stdin is closed;
	// a PTY exec gets the terminal's end-of-file character (^D).
	EOF bool `json:"eof,omitempty"`
}

// DefaultTerm is the TERM of a PTY exec that names none.
const DefaultTerm = "xterm-256color"

// Agent says what to run as the session's agent.
type Agent struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	User    string   `json:"user,omitempty"` // "agent" (default) or "root"
}

// ImageConfig is what a project's image says of how its programs run
// (an OCI image's config, a devcontainer's remoteUser), for the agent's
// user and environment. Each field is optional.
type ImageConfig struct {
	// User is the account the image's programs run as: a name (node,
	// vscode) or a uid. The agent runs as it when the image has it, it
	// is not root, and its uid owns the workspace; otherwise the agent
	// runs as the workspace's owner (the image's account of that uid, or
	// a new account "agent") and agent:started's notes say why.
	User string `json:"user,omitempty"`
	// Env is the image's environment, KEY=VALUE, applied before the
	// start's env. Its PATH comes before Sandbar's own entries.
	Env []string `json:"env,omitempty"`
	// WorkingDir is the image's working directory. The agent works in
	// the repository all the same; the notes say so.
	WorkingDir string `json:"working_dir,omitempty"`
}

// Bounds of ImageConfig.
const (
	MaxImageEnv  = 256  // variables
	MaxImageText = 4096 // bytes of one variable, user or working_dir
)

// GitIdentity is written to the agent user's git configuration.
type GitIdentity struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// WallTime returns Time as a time.Time, and false when it is unset.
func (c Command) WallTime() (time.Time, bool) {
	if c.Time == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, c.Time), true
}

// StdinBytes returns the exec's stdin, whichever field carries it.
func (c Command) StdinBytes() []byte {
	if c.StdinB64 != nil {
		return c.StdinB64
	}
	return []byte(c.Stdin)
}

// SetStdin stores p in Stdin when it is valid UTF-8, else in StdinB64.
func (c *Command) SetStdin(p []byte) {
	if utf8.Valid(p) {
		c.Stdin, c.StdinB64 = string(p), nil
		return
	}
	c.Stdin, c.StdinB64 = "", append([]byte{}, p...)
}

// Validate reports whether c is a command the guest can act on. Errors wrap
// ErrMalformed (or ErrUnknown, which wraps it).
func (c Command) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrMalformed, c.Cmd, fmt.Sprintf(format, a...))
	}
	if c.StatsInterval < 0 || c.Grace < 0 || c.Timeout < 0 {
		return bad("durations must not be negative")
	}
	switch c.Cmd {
	case CmdStart:
		if c.Agent == nil || c.Agent.Command == "" {
			return bad("agent.command is required")
		}
		if !validUser(c.Agent.User) {
			return bad("agent.user must be %q or %q, not %q", UserAgent, UserRoot, c.Agent.User)
		}
		if im := c.Image; im != nil {
			if len(im.Env) > MaxImageEnv {
				return bad("image.env has %d variables, more than %d", len(im.Env), MaxImageEnv)
			}
			for _, v := range append([]string{im.User, im.WorkingDir}, im.Env...) {
				if len(v) > MaxImageText || strings.ContainsRune(v, 0) {
					return bad("image: a value is longer than %d bytes or holds a NUL", MaxImageText)
				}
			}
		}
		if c.CACert != "" {
			if _, err := ParseCACert(c.CACert); err != nil {
				return bad("ca_cert: %v", err)
			}
		}
	case CmdExec:
		if c.ID == "" {
			return bad("id is required")
		}
		if len(c.Argv) == 0 || c.Argv[0] == "" {
			return bad("argv must name a program")
		}
		if c.Stdin != "" && c.StdinB64 != nil {
			return bad("stdin and stdin_b64 are exclusive")
		}
		if !validUser(c.User) {
			return bad("user must be %q or %q, not %q", UserAgent, UserRoot, c.User)
		}
		if c.PTY {
			if err := validWinSize(c.Rows, c.Cols, true); err != nil {
				return bad("%v", err)
			}
			if !validTerm(c.Term) {
				return bad("term must be at most %d letters, digits or ._+- characters, not %q", MaxTermLen, c.Term)
			}
			if c.StdinOpen {
				return bad("pty and stdin_open are exclusive: a PTY's stdin is always open")
			}
		} else if c.Rows != 0 || c.Cols != 0 || c.Term != "" {
			return bad("rows, cols and term need pty")
		}
	case CmdExecStdin:
		if c.ID == "" {
			return bad("id of the exec to feed is required")
		}
		if c.Stdin != "" && c.StdinB64 != nil {
			return bad("stdin and stdin_b64 are exclusive")
		}
		if n := len(c.StdinBytes()); n > MaxStdinPiece {
			return bad("%d bytes of stdin is more than %d: split it", n, MaxStdinPiece)
		}
	case CmdExecResize:
		if c.ID == "" {
			return bad("id of the exec to resize is required")
		}
		if err := validWinSize(c.Rows, c.Cols, false); err != nil {
			return bad("%v", err)
		}
	case CmdExecKill:
		if c.ID == "" {
			return bad("id of the exec to kill is required")
		}
	case CmdSetTime:
		if c.Time == 0 {
			return bad("time is required")
		}
	case CmdChat, CmdStop, CmdShutdown, CmdInterrupt:
	case "":
		return fmt.Errorf("%w: the object has no \"cmd\"", ErrMalformed)
	default:
		return fmt.Errorf("%w: command %q (this guest speaks protocol version %d)", ErrUnknown, c.Cmd, Version)
	}
	return nil
}

func validUser(u string) bool { return u == "" || u == UserAgent || u == UserRoot }

// validWinSize checks a PTY size; zero means the default only where
// optional.
func validWinSize(rows, cols int, optional bool) error {
	if optional && rows == 0 && cols == 0 {
		return nil
	}
	if rows < 1 || rows > MaxWinSize || cols < 1 || cols > MaxWinSize {
		return fmt.Errorf("rows and cols must be 1 to %d, not %d×%d", MaxWinSize, rows, cols)
	}
	return nil
}

func validTerm(t string) bool {
	if len(t) > MaxTermLen {
		return false
	}
	for _, r := range t {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '+' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

// ParseCACert checks a ca_cert: at most MaxCACert bytes holding one to
// MaxCACerts PEM blocks of type CERTIFICATE, without headers, and nothing
// but white space around them. It returns the blocks. It does not parse
// the certificates themselves (crypto/x509 would grow the guest's init);
// the host sends a CA it made and certificates it parsed.
func ParseCACert(s string) ([]*pem.Block, error) {
	if len(s) > MaxCACert {
		return nil, fmt.Errorf("%d bytes is more than %d", len(s), MaxCACert)
	}
	var blocks []*pem.Block
	rest := []byte(s)
	for {
		rest = bytes.TrimSpace(rest)
		if len(rest) == 0 {
			break
		}
		if !bytes.HasPrefix(rest, []byte("-----BEGIN ")) {
			return nil, errors.New("text outside a PEM block: send PEM CERTIFICATE blocks only")
		}
		var b *pem.Block
		b, rest = pem.Decode(rest)
		switch {
		case b == nil:
			return nil, errors.New("a PEM block does not decode")
		case b.Type != "CERTIFICATE":
			return nil, fmt.Errorf("a PEM block of type %q: only CERTIFICATE is taken", b.Type)
		case len(b.Headers) > 0:
			return nil, errors.New("a CERTIFICATE block has headers")
		case len(b.Bytes) == 0:
			return nil, errors.New("a CERTIFICATE block is empty")
		}
		if len(blocks) == MaxCACerts {
			return nil, fmt.Errorf("more than %d CERTIFICATE blocks", MaxCACerts)
		}
		blocks = append(blocks, b)
	}
	if len(blocks) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	// pem.Decode passes over a block it cannot read to the next one.
	if n := strings.Count(s, "-----BEGIN "); n != len(blocks) {
		return nil, fmt.Errorf("%d of %d PEM blocks do not decode", n-len(blocks), n)
	}
	return blocks, nil
}
