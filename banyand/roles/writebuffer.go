package roles

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/banyand-io/banyand/banyand/storage"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
)

// registerWriteBufferFlag binds --write-buffer-size for the roles that
// store data.
func registerWriteBufferFlag(fs *pflag.FlagSet, v *int64) {
	fs.Int64Var(v, "write-buffer-size", tsdb.DefaultBufferBytes,
		"bytes of writes the storage engine buffers in memory before flushing them to disk as one file; "+
			"up to about twice this is held while a flush runs (at least 1 MiB)")
}

func validateWriteBuffer(v int64) error {
	if v < storage.MinBufferBytes {
		return fmt.Errorf("--write-buffer-size %d: must be at least %d (1 MiB)", v, storage.MinBufferBytes)
	}
	return nil
}
