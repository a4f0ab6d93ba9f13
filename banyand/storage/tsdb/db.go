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
	"path/filepath"
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
	// BufferBytes is the write buffer's flush size; <= 0 means
	// DefaultBufferBytes. Tests set it small to make flushes happen.
	BufferBytes int64
	// SyncGather is how long a sync of the write-ahead log may wait for
	// the writers the previous sync released to queue their next records,
	// so that they share it (group commit); 0 syncs at once. A lone
	// writer, or the first after a quiet spell, does not wait.
	SyncGather time.Duration

	// syncs replaces the store's syncs in tests; the zero value syncs.
	syncs syncer
}

// DefaultSyncGather is the data nodes' SyncGather (--write-log-gather):
// a moment for the writers a sync released to come back, short against a
// write's whole path.
const DefaultSyncGather = 250 * time.Microsecond

// Subdirectories of the data directory that are the store's, not Pebble's.
const (
	walDirName    = "write-log"
	ingestDirName = "ingest"
)

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
	specs    specSeen // index specs logged per segment (index.go)
	stalls   *writeStalls
	// lastStats is EngineStats' last read, served once Pebble is closing.
	lastStats atomic.Pointer[EngineStats]

	// The write path (docs/design/write-buffer.md): a write is logged in
	// wal and added to mem; the flusher seals mem into imm when it is full
	// and has Pebble ingest it as an sstable.
	popts       *pebble.Options
	walDir      string
	ingestDir   string
	wal         *writeLog
	bufferBytes int64
	// bufMu is held for reading while a write logs and buffers its
	// records, and for writing to seal mem: so a log file holds exactly
	// the records of the buffers sealed with it.
	bufMu    sync.RWMutex
	mem, imm *memBuffer
	flushMu  sync.Mutex // one flush at a time
	// sealedAt is when the last buffer was sealed and fillTime how long
	// it took to fill; under flushMu.
	sealedAt time.Time
	fillTime time.Duration
	// drops counts DropExpired calls that dropped something (see
	// ingestBufferPaced).
	drops atomic.Int64
	// afterBuild, if set, runs between building a flush's table and
	// ingesting it: tests drop segments there.
	afterBuild func()
	// afterDropStep, if set, runs after each durable step of a drop
	// (1, then 2) and may end the drop there: tests stop a drop between
	// its steps, as a crash would.
	afterDropStep func(step int) error
	sstSeq        atomic.Uint64
	// flushKick wakes the flusher; stopFlusher stops it, flusherDone says
	// it stopped.
	flushKick   chan struct{}
	stopFlusher chan struct{}
	flusherDone chan struct{}
	// room is closed, and replaced, each time a flush finishes.
	roomMu     sync.Mutex
	room       chan struct{}
	flushes    atomic.Int64
	flushBytes atomic.Uint64

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
	if err := mkdirDurable(dir, opts.syncs); err != nil {
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
	// Defaults filled in here too: ingest builds sstables from popts.
	popts.EnsureDefaults()
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("tsdb: open %s: %w", dir, err)
	}
	db := &DB{
		pdb:         pdb,
		opts:        opts,
		log:         log,
		writeOpt:    pebble.Sync,
		segs:        newSegmentIndex(),
		stalls:      stalls,
		closed:      make(chan struct{}),
		popts:       popts,
		walDir:      filepath.Join(dir, walDirName),
		ingestDir:   filepath.Join(dir, ingestDirName),
		bufferBytes: opts.BufferBytes,
		mem:         newMemBuffer(),
		flushKick:   make(chan struct{}, 1),
		stopFlusher: make(chan struct{}),
		flusherDone: make(chan struct{}),
		room:        make(chan struct{}),
	}
	if db.bufferBytes <= 0 {
		db.bufferBytes = DefaultBufferBytes
	}
	if opts.NoSync {
		db.writeOpt = pebble.NoSync
	}
	if err := db.start(); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	go db.flusher()
	return db, nil
}

// start loads the segment list, replays what the previous run left in the
// write log, and opens a new log file.
func (db *DB) start() error {
	if err := db.loadSegments(); err != nil {
		return err
	}
	// Made durable before the first record: a log file synced inside a
	// write-log/ that a crash then loses takes its acked writes with it.
	// (ingest/ could do without; one rule for both is simpler.)
	for _, d := range []string{db.walDir, db.ingestDir} {
		if err := mkdirDurable(d, db.opts.syncs); err != nil {
			return fmt.Errorf("tsdb: create %s: %w", d, err)
		}
	}
	// Leftovers of a flush a crash interrupted: their records are still
	// in the log.
	if err := clearDir(db.ingestDir); err != nil {
		return fmt.Errorf("tsdb: clear %s: %w", db.ingestDir, err)
	}
	next, err := db.replay()
	if err != nil {
		return err
	}
	if db.wal, err = openWriteLog(db.walDir, next, db.opts.NoSync, db.opts.SyncGather, db.opts.syncs); err != nil {
		return err
	}
	// The replayed records are in Pebble now.
	if err := db.wal.removeThrough(next - 1); err != nil {
		_ = db.wal.close()
		return err
	}
	return nil
}

func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
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

// finishClose stops the flusher, writes what is buffered to Pebble (so
// the next Open has no log to replay; if this fails, it replays it), and
// closes the log and Pebble.
func (db *DB) finishClose() {
	close(db.stopFlusher)
	<-db.flusherDone
	err := db.flushAll()
	if err != nil {
		db.log.Error("storage engine: final flush failed; the write log keeps the writes for the next start", "err", err)
	}
	if werr := db.wal.close(); err == nil {
		err = werr
	}
	if perr := db.pdb.Close(); err == nil {
		err = perr
	}
	db.closeErr = err
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
