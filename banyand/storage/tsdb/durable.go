package tsdb

import "os"

// syncer makes the store's files durable. Its zero value is the real
// one; tests set its functions to hold or count syncs (a sync that
// blocks is how a test stands between a write and its durability).
type syncer struct {
	file func(*os.File) error // a log file's data: syncData
}

func (s syncer) syncFile(f *os.File) error {
	if s.file != nil {
		return s.file(f)
	}
	return syncData(f)
}
