package config

import (
	"path/filepath"
	"time"
)

// trashDir holds the folders of deleted sessions until the trash is
// emptied.
const trashDir = "trash"

// trashTime is how a trashed session's folder name says when it was
// deleted.
const trashTime = "20060102T150405Z"

// Trash is the folder of deleted sessions: trash/<id>-<when>/, each the
// session's folder as it was, moved there whole.
func (p Paths) Trash() string { return filepath.Join(p.Home, trashDir) }

// TrashedSessionDir is the folder session id was moved to when it was
// deleted at deleted (to the second, in UTC).
func (p Paths) TrashedSessionDir(id string, deleted time.Time) SessionDir {
	return SessionDir{dir: filepath.Join(p.Trash(), id+"-"+deleted.UTC().Format(trashTime))}
}
