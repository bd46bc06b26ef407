package devcontainer

import (
	"fmt"
	"unicode/utf8"
)

// Error is a problem at one place of a devcontainer.json. Its text reads
// "FILE:LINE:COL: what is wrong — what to do", the form editors and
// terminals turn into a link to the place.
type Error struct {
	File string // the file's path inside the repository, as Find gives it
	Line int    // 1-based
	Col  int    // 1-based, in characters (UTF-8 code points) of the line
	Msg  string // what is wrong — what to do
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// position turns a byte offset of data into a 1-based line and column.
// The column counts characters, so it matches what an editor shows for a
// line with non-ASCII text. An offset past the end is the end.
func position(data []byte, off int) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > len(data) {
		off = len(data)
	}
	line, start := 1, 0
	for i := 0; i < off; i++ {
		if data[i] == '\n' {
			line++
			start = i + 1
		}
	}
	return line, 1 + utf8.RuneCount(data[start:off])
}

// offsetOf is the inverse of a line and a byte column (as the JSONC parser
// reports them); it is clamped to the data.
func offsetOf(data []byte, line, byteCol int) int {
	off := 0
	for l := 1; l < line && off < len(data); off++ {
		if data[off] == '\n' {
			l++
		}
	}
	off += byteCol - 1
	if off < 0 {
		return 0
	}
	if off > len(data) {
		return len(data)
	}
	return off
}
