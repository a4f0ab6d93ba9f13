package tsdb

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// syncer makes the store's files and directories durable. Its zero value
// is the real one; tests set its functions to hold or count syncs (a
// sync that blocks is how a test stands between a write and its
// durability).
type syncer struct {
	file func(*os.File) error // a log file's data: syncData
	dir  func(string) error   // a directory's entries: syncDir
}

func (s syncer) syncFile(f *os.File) error {
	if s.file != nil {
		return s.file(f)
	}
	return syncData(f)
}

func (s syncer) syncDir(dir string) error {
	if s.dir != nil {
		return s.dir(dir)
	}
	return syncDir(dir)
}

// syncDir makes dir's entries durable: the files and directories made,
// renamed or removed in it.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirDurable makes dir and its missing parents, as os.MkdirAll does,
// and syncs the parent of each directory it made, and dir's parent even
// if dir was there: a new directory is durable only once its parent's
// entry for it is, and a dir that exists may be one a process made just
// before it crashed, with the entry still only in the page cache. Without
// it a crash of the machine could lose write-log/ with the records that
// were synced inside it.
func mkdirDurable(dir string, s syncer) error {
	dir = filepath.Clean(dir)
	// The parents to sync: dir's, and up to the closest ancestor that
	// exists, included.
	var parents []string
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		parents = append(parents, p)
		if filepath.Dir(p) == p {
			break
		}
		if _, err := os.Stat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range parents {
		if err := s.syncDir(p); err != nil {
			return err
		}
	}
	return nil
}
