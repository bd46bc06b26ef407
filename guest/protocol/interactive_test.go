package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestInteractiveExecValidation(t *testing.T) {
	big := strings.Repeat("x", MaxStdinPiece+1)
	tests := []struct {
		name string
		c    Command
		ok   bool
	}{
		{"pty default size", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, PTY: true}, true},
		{"pty sized", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, PTY: true, Rows: 50, Cols: 200, Term: "xterm-256color"}, true},
		{"pty rows only", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, PTY: true, Rows: 50}, false},
		{"pty too wide", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, PTY: true, Rows: 50, Cols: MaxWinSize + 1}, false},
		{"pty negative", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, PTY: true, Rows: -1, Cols: 80}, false},
		{"term with a space", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, PTY: true, Term: "xterm; rm"}, false},
		{"term too long", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, PTY: true, Term: strings.Repeat("x", MaxTermLen+1)}, false},
		{"size without pty", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, Rows: 24, Cols: 80}, false},
		{"term without pty", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, Term: "xterm"}, false},
		{"pty and stdin_open", Command{Cmd: CmdExec, ID: "1", Argv: []string{"bash"}, PTY: true, StdinOpen: true}, false},
		{"stdin_open", Command{Cmd: CmdExec, ID: "1", Argv: []string{"cat"}, StdinOpen: true}, true},
		{"stdin piece", Command{Cmd: CmdExecStdin, ID: "1", Stdin: "ls\r"}, true},
		{"stdin eof only", Command{Cmd: CmdExecStdin, ID: "1", EOF: true}, true},
		{"stdin without id", Command{Cmd: CmdExecStdin, Stdin: "x"}, false},
		{"stdin too big", Command{Cmd: CmdExecStdin, ID: "1", Stdin: big}, false},
		{"stdin both fields", Command{Cmd: CmdExecStdin, ID: "1", Stdin: "a", StdinB64: []byte{0xff}}, false},
		{"resize", Command{Cmd: CmdExecResize, ID: "1", Rows: 40, Cols: 120}, true},
		{"resize to zero", Command{Cmd: CmdExecResize, ID: "1"}, false},
		{"resize without id", Command{Cmd: CmdExecResize, Rows: 40, Cols: 120}, false},
		{"resize too tall", Command{Cmd: CmdExecResize, ID: "1", Rows: MaxWinSize + 1, Cols: 120}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate: %v, want ok", err)
			}
			if !tt.ok && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Validate: %v, want ErrMalformed", err)
			}
		})
	}
}

func TestStdinAckValidation(t *testing.T) {
	for _, tt := range []struct {
		e  Event
		ok bool
	}{
		{Event{Ev: EvExecStdinAck, ID: "1", N: 10}, true},
		{Event{Ev: EvExecStdinAck, ID: "1", N: StdinWindow}, true},
		{Event{Ev: EvExecStdinAck, ID: "1", N: StdinWindow + 1}, false},
		{Event{Ev: EvExecStdinAck, ID: "1"}, false},
		{Event{Ev: EvExecStdinAck, N: 3}, false},
	} {
		if err := tt.e.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: Validate = %v, want ok %v", tt.e, err, tt.ok)
		}
	}
	ready := Event{Ev: EvReady, Features: []string{FeaturePTY}}
	if !ready.HasFeature(FeaturePTY) || (Event{Ev: EvReady}).HasFeature(FeaturePTY) {
		t.Error("HasFeature does not read Features")
	}
}
