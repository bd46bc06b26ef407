package hostproc

import "testing"

func TestParseStat(t *testing.T) {
	tail := " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20 21"
	tests := []struct {
		name, line string
		want       Process
		bad        bool
	}{
		{name: "plain", line: "7 (qemu-system-x86) S" + tail, want: Process{PID: 7, Name: "qemu-system-x86", Start: 4242}},
		{name: "name with a paren and spaces", line: "7 (a) b (c) R" + tail, want: Process{PID: 7, Name: "a) b (c", Start: 4242}},
		{name: "zombie", line: "7 (sleep) Z" + tail, want: Process{PID: 7, Name: "sleep", Start: 4242, Zombie: true}},
		{name: "no name", line: "7 sleep S" + tail, bad: true},
		{name: "too short", line: "7 (sleep) S 1 2", bad: true},
		{name: "start not a number", line: "7 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(7, []byte(tt.line))
			if tt.bad {
				if err == nil {
					t.Fatalf("parsed %+v, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
