// Package tsdb is the data node's time-series store: stream elements and
// measure data points in one Pebble database, keyed so that a redelivered
// write overwrites itself, a time-range query reads only the segments it
// overlaps, and retention drops a whole segment with one range deletion.
// docs/design/storage.md describes the layout.
//
// The package knows keys and bytes, not protobuf: callers hand it marshalled
// values with the few fields the key needs.
package tsdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/banyand-io/banyand/pkg/pebblelog"
)

// ErrClosed is returned by operations on a DB that is closing or closed.
var ErrClosed = errors.New("tsdb: database is closed")

// Options configures a DB. The zero value is usable.
type Options struct {
	// SegmentInterval returns the length of new segments for a group (its
	// resource_opts.segment_interval). Nil, or a result <= 0, means
	// DefaultSegmentInterval. It is called on the write path: keep it cheap.
	SegmentInterval func(group string) time.Duration
	// Logger receives Pebble's messages; nil means slog.Default().
	Logger *slog.Logger
	// NoSync commits batches without waiting for fsync. For benchmarks
	// that isolate the CPU cost only: a write acked without sync may be lost.
	NoSync bool
}

// DB is an open store. It is safe for concurrent use.
//
// Closing is two-phase: Close stops new operations at once (they fail with
// ErrClosed), waits for the ones in flight, and only then closes Pebble.
type DB struct {
	pdb      *pebble.DB
	opts     Options
	log      *slog.Logger
	writeOpt *pebble.WriteOptions
	segs     *segmentIndex
	stalls   *writeStalls
	// lastStats is EngineStats' last read, served once Pebble is closing.
	lastStats atomic.Pointer[EngineStats]

	// retention is held for reading by every write from segment assignment
	// until commit, and for writing by DropExpired, so a segment is never
	// dropped between a write choosing it and that write committing.
	retention sync.RWMutex

	// mu guards closing and inflight. Once closing is set no operation
	// starts; the one that brings inflight to 0 (or Close, if none is in
	// flight) closes Pebble, exactly once.
	mu        sync.Mutex
	closing   bool
	inflight  int
	closeOnce sync.Once
	closeErr  error         // written before closed is closed
	closed    chan struct{} // closed once Pebble is closed
}

// Open opens (creating if needed) the store in dir and loads its segment list.
func Open(dir string, opts Options) (*DB, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tsdb: create data directory: %w", err)
	}
	popts := &pebble.Options{
		Logger: pebblelog.Logger{Log: log},
		Merger: measureMerger,
		// With Pebble's 4 MB default, flushes and the L0 compactions
		// they trigger took a quarter of the CPU of a write-heavy load
		// (docs/performance.md). Memtables start small and grow to this.
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 4,
	}
	stalls := &writeStalls{log: log}
	popts.AddEventListener(stalls.listener())
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("tsdb: open %s: %w", dir, err)
	}
	db := &DB{
		pdb:      pdb,
		opts:     opts,
		log:      log,
		writeOpt: pebble.Sync,
		segs:     newSegmentIndex(),
		stalls:   stalls,
		closed:   make(chan struct{}),
	}
	if opts.NoSync {
		db.writeOpt = pebble.NoSync
	}
	if err := db.loadSegments(); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) loadSegments() error {
	prefix := []byte{byte(kindSegmentMeta)}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("tsdb: load segments: %w", err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		kind, group, start, err := parseSegmentMetaKey(it.Key())
		v := it.Value()
		if err != nil || len(v) != 8 {
			_ = it.Close()
			return fmt.Errorf("tsdb: load segments: bad record %x: %w", it.Key(), errMalformed)
		}
		db.segs.load(Segment{Kind: kind, Group: group, Start: start, End: readInt64(v)})
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("tsdb: load segments: %w", err)
	}
	return nil
}

// acquire registers an operation; every successful acquire must be paired
// with release.
func (db *DB) acquire() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closing {
		return ErrClosed
	}
	db.inflight++
	return nil
}

func (db *DB) release() {
	db.mu.Lock()
	db.inflight--
	last := db.closing && db.inflight == 0
	db.mu.Unlock()
	if last {
		db.closeOnce.Do(db.finishClose)
	}
}

// Close stops intake, waits until operations in flight have finished or
// ctx is done, and closes Pebble. If ctx ends first, Close returns an error
// saying how many operations were still running, and the last of them
// closes Pebble as it finishes (Done reports when). Calling Close again
// waits again.
func (db *DB) Close(ctx context.Context) error {
	db.mu.Lock()
	db.closing = true
	idle := db.inflight == 0
	db.mu.Unlock()
	if idle {
		db.closeOnce.Do(db.finishClose)
	}
	select {
	case <-db.closed:
		return db.closeErr
	case <-ctx.Done():
		db.mu.Lock()
		n := db.inflight
		db.mu.Unlock()
		return fmt.Errorf("tsdb: close: %d operations still in flight: %w", n, ctx.Err())
	}
}

func (db *DB) finishClose() {
	db.closeErr = db.pdb.Close()
	close(db.closed)
}

// Done is closed once Pebble has been closed.
func (db *DB) Done() <-chan struct{} { return db.closed }

func (db *DB) segmentInterval(group string) time.Duration {
	if db.opts.SegmentInterval != nil {
		if d := db.opts.SegmentInterval(group); d > 0 {
			return d
		}
	}
	return DefaultSegmentInterval
}

// Segments returns every segment in key order, for diagnostics and tests.
func (db *DB) Segments() []Segment { return db.segs.all() }
