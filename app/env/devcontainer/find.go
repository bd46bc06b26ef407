package devcontainer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The places Find looks, after a file named in the project's settings.
const (
	DefaultPath = ".devcontainer/devcontainer.json"
	RootPath    = ".devcontainer.json"
)

// Find gives the devcontainer.json of the repository at repoDir, as a
// slash-separated path inside it, in the order: the file named in
// the project's settings (named, a path inside the repository; a named
// file that is missing is an error, not a reason to use another), else
// DefaultPath, else RootPath. It gives ("", nil) when there is none.
//
// The repository is hostile: the path may not leave it, through "..", an
// absolute path, or a link on the way. What is found must be a regular
// file (a link to one inside the repository is fine) of at most
// MaxFileSize bytes; a FIFO, a device or a socket is refused without being
// opened.
func Find(repoDir, named string) (string, error) {
	root, err := os.OpenRoot(repoDir)
	if err != nil {
		return "", fmt.Errorf("open the repository %s: %w", repoDir, err)
	}
	defer root.Close()
	if named != "" {
		rel, err := localPath(named)
		if err != nil {
			return "", err
		}
		ok, err := check(root, rel)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("the project's settings name %s as its devcontainer.json, and the repository has no such file: fix the setting or add the file", rel)
		}
		return rel, nil
	}
	for _, rel := range []string{DefaultPath, RootPath} {
		ok, err := check(root, rel)
		if err != nil {
			return "", err
		}
		if ok {
			return rel, nil
		}
	}
	return "", nil
}

// localPath checks a path the project's settings give.
func localPath(named string) (string, error) {
	p := filepath.ToSlash(named)
	if filepath.IsAbs(named) || !filepath.IsLocal(named) {
		return "", fmt.Errorf("the project's settings name %q as its devcontainer.json: name a file inside the repository, like %q, without \"..\"", named, DefaultPath)
	}
	return filepath.ToSlash(filepath.Clean(p)), nil
}

// check says whether rel is there, and refuses it when it is there but is
// no file Sandbar may read. It never opens the file.
func check(root *os.Root, rel string) (bool, error) {
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil // ENOTDIR: .devcontainer is a file, not a folder
	}
	if err != nil {
		return false, fmt.Errorf("%s cannot be read inside the repository (a folder on its way may be a link out of it): %w", rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		fi, err = root.Stat(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("%s is a link to nothing: replace it with the file", rel)
		}
		if err != nil {
			return false, fmt.Errorf("%s is a link that leads out of the repository; Sandbar reads only files inside it: replace the link with the file itself", rel)
		}
	}
	return true, regularFile(rel, fi)
}

func regularFile(rel string, fi fs.FileInfo) error {
	m := fi.Mode()
	switch {
	case m.IsRegular():
		if fi.Size() > MaxFileSize {
			return fmt.Errorf("%s is %d bytes, over the %d a devcontainer.json may have: shrink it", rel, fi.Size(), MaxFileSize)
		}
		return nil
	case m.IsDir():
		return fmt.Errorf("%s is a folder, not a file: put the devcontainer.json there as a file", rel)
	case m&fs.ModeNamedPipe != 0:
		return fmt.Errorf("%s is a named pipe (FIFO), not a file; Sandbar reads only regular files from a repository: replace it with the file", rel)
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return fmt.Errorf("%s is a device, not a file; Sandbar reads only regular files from a repository: replace it with the file", rel)
	case m&fs.ModeSocket != 0:
		return fmt.Errorf("%s is a socket, not a file; Sandbar reads only regular files from a repository: replace it with the file", rel)
	}
	return fmt.Errorf("%s is not a regular file (%s): replace it with the file", rel, m.Type())
}

// Read reads rel, a path Find gave, from the repository at repoDir, with
// the same checks as Find made, again on the opened file: the repository
// may have changed in between. It reads at most MaxFileSize bytes.
func Read(repoDir, rel string) ([]byte, error) {
	root, err := os.OpenRoot(repoDir)
	if err != nil {
		return nil, fmt.Errorf("open the repository %s: %w", repoDir, err)
	}
	defer root.Close()
	rel, err = localPath(rel)
	if err != nil {
		return nil, err
	}
	ok, err := check(root, rel)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s is no longer in the repository: look again", rel)
	}
	// O_NONBLOCK: were a FIFO swapped in after the check, opening it must
	// not wait for a writer. It changes nothing for a regular file.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if err := regularFile(rel, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s is over the %d bytes a devcontainer.json may have: shrink it", rel, MaxFileSize)
	}
	return data, nil
}

// Load finds, reads and parses the repository's devcontainer.json. It
// gives (nil, nil) when the repository has none.
func Load(repoDir, named string) (*Config, error) {
	rel, err := Find(repoDir, named)
	if err != nil || rel == "" {
		return nil, err
	}
	data, err := Read(repoDir, rel)
	if err != nil {
		return nil, err
	}
	return Parse(rel, data)
}
