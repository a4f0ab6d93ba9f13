package roles

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/banyand-io/banyand/banyand/storage"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
)

// engineFlags are the storage engine's settings, shared by the roles that
// store data (storage and standalone).
type engineFlags struct {
	// WriteBuffer is the write buffer's size (--write-buffer-size).
	WriteBuffer int64
	// SyncGather is how long a write-ahead log sync may wait for more
	// writers to share it (--write-log-gather).
	SyncGather time.Duration
}

func (e *engineFlags) register(fs *pflag.FlagSet) {
	fs.Int64Var(&e.WriteBuffer, "write-buffer-size", tsdb.DefaultBufferBytes,
		"bytes of writes the storage engine buffers in memory before flushing them to disk as one file; "+
			"up to about twice this is held while a flush runs (at least 1 MiB)")
	fs.DurationVar(&e.SyncGather, "write-log-gather", tsdb.DefaultSyncGather,
		"longest a sync of the write-ahead log waits for the writers the previous sync released to queue their next "+
			"batches, so that they share one fdatasync (group commit); a lone writer, or the first write after a quiet spell, "+
			"does not wait; 0 syncs at once (at most "+
			storage.MaxSyncGather.String()+")")
}

func (e *engineFlags) validate() error {
	var errs []error
	if e.WriteBuffer < storage.MinBufferBytes {
		errs = append(errs, fmt.Errorf("--write-buffer-size %d: must be at least %d (1 MiB)", e.WriteBuffer, storage.MinBufferBytes))
	}
	if e.SyncGather < 0 || e.SyncGather > storage.MaxSyncGather {
		errs = append(errs, fmt.Errorf("--write-log-gather %v: must be between 0 and %v", e.SyncGather, storage.MaxSyncGather))
	}
	return errors.Join(errs...)
}

// storageConfig is the store's configuration for data directory dir.
func (e *engineFlags) storageConfig(dir string) storage.Config {
	return storage.Config{Dir: dir, BufferBytes: e.WriteBuffer, SyncGather: e.SyncGather}
}

// registerTopNFlag binds --topn-pre-aggregation, which data nodes,
// liaisons and standalone share: a cluster's must agree.
func registerTopNFlag(fs *pflag.FlagSet, on *bool) {
	fs.BoolVar(on, "topn-pre-aggregation", false,
		"keep each top-N aggregation's rankings (counters_number series a window, shard and group-by value) as the source measure's writes arrive, "+
			"and answer MeasureService.TopN from them instead of from the points; data nodes keep them, liaisons read them: set it on all or none")
}
