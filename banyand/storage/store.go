// Package storage is the data node's storage engine: it persists the
// stream and measure writes the liaison routes to this node, answers the
// queries it scatters here, and drops data past its group's TTL. It serves
// the queue's four data topics through queue.Listener implementations; the
// bytes live in a tsdb.DB (one Pebble database per node).
//
// Durability: a write listener returns only after its batch was committed
// with a synced Pebble write, so an ack means the data survives a crash.
package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
)

// DefaultDir is where data lives when the config names no directory.
const DefaultDir = "data/storage"

// Errors callers branch on.
var (
	// ErrClosed: the store is not open (before Start, or once Stop began).
	// It wraps queue.ErrClosed, so the subscriber reports it as transient.
	ErrClosed = fmt.Errorf("storage: store is not open: %w", queue.ErrClosed)
	// ErrUnimplemented: the query uses a feature this engine does not
	// support (e.g. MATCH, IN, group by, aggregation).
	ErrUnimplemented = errors.New("unimplemented")
)

// Config configures a Store.
type Config struct {
	// Dir is the data directory; created if missing.
	Dir string
	// BufferBytes is the write buffer's flush size (0 = the default,
	// tsdb.DefaultBufferBytes). A node holds up to about twice this in
	// memory while a flush runs.
	BufferBytes int64
	// SyncGather is how long a sync of the write-ahead log may wait for
	// more writers to share it (tsdb.Options.SyncGather); 0 syncs at once.
	SyncGather time.Duration
}

// MaxSyncGather bounds SyncGather: every write may wait this long.
const MaxSyncGather = 100 * time.Millisecond

// MinBufferBytes is the smallest write buffer Validate accepts: smaller
// ones flush so often that Pebble's compactions of the many small files
// cost more than they save.
const MinBufferBytes = 1 << 20

// RegisterFlags binds the operator-facing settings to fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Dir, "storage-dir", DefaultDir, "directory holding the data node's stream and measure data")
}

// Validate reports a config the store cannot open with.
func (c *Config) Validate() error {
	if c.Dir == "" {
		return errors.New("storage: data directory is required")
	}
	if c.BufferBytes != 0 && c.BufferBytes < MinBufferBytes {
		return fmt.Errorf("storage: write buffer size %d bytes is below the minimum of %d", c.BufferBytes, MinBufferBytes)
	}
	if c.SyncGather < 0 || c.SyncGather > MaxSyncGather {
		return fmt.Errorf("storage: write log gather time %v is outside 0–%v", c.SyncGather, MaxSyncGather)
	}
	return nil
}

// GroupOptions tells the store how a group lays out its data. The storage
// role backs it with the schema cache; it is read on the write path, so it
// must be cheap and safe for concurrent use.
type GroupOptions interface {
	// SegmentInterval is the group's resource_opts.segment_interval (see
	// schema.IntervalDuration); 0 for an unknown group means tsdb.DefaultSegmentInterval.
	SegmentInterval(group string) time.Duration
}

// SegmentIntervalFunc adapts a function to GroupOptions.
type SegmentIntervalFunc func(group string) time.Duration

// SegmentInterval calls f.
func (f SegmentIntervalFunc) SegmentInterval(group string) time.Duration { return f(group) }

// Store is the data node's storage engine. It is safe for concurrent use.
//
// Backpressure: the store has no queue of its own. A write call blocks its
// caller (the subscriber's batch) for one synced commit; concurrent calls
// commit in parallel and share fsyncs, except property batches, which
// commit one at a time (each reads the records it replaces; properties
// are few and small). DropExpired holds new commits back
// for the duration of its own single commit. Queries hold nothing but an
// iterator per segment and keep at most offset+limit records in memory.
type Store struct {
	cfg    Config
	groups GroupOptions
	log    *slog.Logger

	mu sync.Mutex // guards db; operations copy it and never hold mu for I/O
	db *tsdb.DB

	// holders, when set, records the (group, shard) pairs this node holds
	// before it stores the first write of each.
	holders HolderRecorder

	// topn, when set, keeps the top-N aggregations' rankings as their
	// source measures' writes arrive (PreAggregateTopN).
	topn *topNAggregator

	// propertyMu makes this node the single writer of its properties:
	// a property write reads the record it replaces and merges into it,
	// held from the read until the result is durable (property.go).
	propertyMu sync.Mutex

	// reads totals what queries read (ReadTotals).
	reads struct{ segments, indexed, records atomic.Int64 }
}

// ReadTotals is what this node's queries have read: segments, those read
// through their tag indexes, and records visited.
type ReadTotals struct {
	Segments, IndexedSegments, Records int64
}

// ReadTotals returns what queries have read since the store was made.
func (s *Store) ReadTotals() ReadTotals {
	return ReadTotals{Segments: s.reads.segments.Load(), IndexedSegments: s.reads.indexed.Load(), Records: s.reads.records.Load()}
}

func (s *Store) countReads(r scanStats) {
	s.reads.segments.Add(int64(r.segments))
	s.reads.indexed.Add(int64(r.indexed))
	s.reads.records.Add(int64(r.scanned))
}

// HolderRecorder records that this node holds data of a group's shard, so
// that queries know to ask it (pkg/registry/etcd.HolderRecorder). Record
// returns once that is durable; it is called before the first write of a
// pair is stored, so no acknowledged write sits on a node nobody asks.
type HolderRecorder interface {
	Record(ctx context.Context, group string, shard uint32) error
}

// RecordHolders makes the store record what it holds with r; call it
// before Start. Standalone has no need: its one node is always asked.
func (s *Store) RecordHolders(r HolderRecorder) { s.holders = r }

// New allocates a store; Start opens it. A nil groups gives every group the
// default segment interval; a nil logger means slog.Default().
func New(cfg Config, groups GroupOptions, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.Default()
	}
	return &Store{cfg: cfg, groups: groups, log: logger.With("component", "storage")}
}

// Name implements run.Component.
func (s *Store) Name() string { return "storage" }

// RegisterFlags implements run.FlagRegisterer.
func (s *Store) RegisterFlags(fs *pflag.FlagSet) { s.cfg.RegisterFlags(fs) }

// Validate implements run.Validator.
func (s *Store) Validate() error { return s.cfg.Validate() }

// Start opens the data directory (creating it) and loads the segment list.
func (s *Store) Start(context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	if db, _ := s.DB(); db != nil {
		return errors.New("storage: already started")
	}
	opts := tsdb.Options{Logger: s.log, BufferBytes: s.cfg.BufferBytes, SyncGather: s.cfg.SyncGather}
	if s.groups != nil {
		opts.SegmentInterval = s.groups.SegmentInterval
	}
	db, err := tsdb.Open(s.cfg.Dir, opts)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		_ = db.Close(context.Background())
		return errors.New("storage: already started")
	}
	s.db = db
	s.log.Info("storage opened", "dir", s.cfg.Dir)
	return nil
}

// Stop is two-phase: new writes and queries fail with ErrClosed at once,
// then Stop waits for those in flight until ctx is done and closes the
// database. If ctx ends first it returns an error counting what was still
// running; the database is closed when the last of it finishes.
func (s *Store) Stop(ctx context.Context) error {
	s.mu.Lock()
	db := s.db
	s.db = nil
	s.mu.Unlock()
	if db == nil {
		return nil
	}
	if err := db.Close(ctx); err != nil {
		return fmt.Errorf("storage: stop: %w", err)
	}
	s.log.Info("storage closed")
	return nil
}

// Close is Stop without a deadline. It is safe to call more than once.
func (s *Store) Close() error { return s.Stop(context.Background()) }

// DB returns the open database, or ErrClosed.
func (s *Store) DB() (*tsdb.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil, ErrClosed
	}
	return s.db, nil
}

// DropExpired deletes every segment older than its group's TTL (see
// tsdb.DB.DropExpired); groups missing from ttlByGroup keep their data. The
// role calls it periodically with TTLs from the schema (schema.IntervalDuration of
// resource_opts.ttl). It returns how many segments were dropped.
func (s *Store) DropExpired(now time.Time, ttlByGroup map[string]time.Duration) (int, error) {
	db, err := s.DB()
	if err != nil {
		return 0, err
	}
	dropped, err := db.DropExpired(now, ttlByGroup)
	if err != nil {
		return 0, fmt.Errorf("storage: %w", mapClosed(err))
	}
	return len(dropped), nil
}

// mapClosed turns the database's closed error into ErrClosed.
func mapClosed(err error) error {
	if errors.Is(err, tsdb.ErrClosed) {
		return ErrClosed
	}
	return err
}
