package tsdb

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes f's data durable: fdatasync, the data and size without
// the times, which saves a metadata write a sync.
func syncData(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
