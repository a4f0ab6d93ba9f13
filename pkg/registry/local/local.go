// Package local is the schema registry for standalone: the same behaviour
// as the etcd store, persisted with Pebble in a directory, watched through
// an in-process fan-out.
//
// Revisions come from a counter persisted with every write (key
// meta/revision, big-endian uint64), so they keep growing across restarts.
// Each write (including a forced group delete of many objects) takes one
// revision and is one synced Pebble batch.
package local

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/banyand-io/banyand/pkg/pebblelog"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/registry/internal/codec"
)

// DefaultWatchBuffer is the per-watcher queue length when Config leaves it 0.
const DefaultWatchBuffer = 1024

// ErrClosed is returned by a store that is not open (before Start, after Close).
var ErrClosed = errors.New("registry/local: store is not open")

const schemaPrefix = "schema/"

var revisionKey = []byte("meta/revision")

// Config configures a Store.
type Config struct {
	// Dir is the Pebble directory holding the schema; created if missing.
	Dir string
	// WatchBuffer is how many revisions a watcher may fall behind before
	// it is resynced (see Store). Zero means DefaultWatchBuffer.
	WatchBuffer int
}

// Validate reports a config the store cannot open with.
func (c *Config) Validate() error {
	if c.Dir == "" {
		return errors.New("registry/local: data directory is required")
	}
	if c.WatchBuffer < 0 {
		return fmt.Errorf("registry/local: watch buffer must not be negative, got %d", c.WatchBuffer)
	}
	return nil
}

// Store is a registry.SchemaStore in a Pebble directory. It is safe for
// concurrent use.
//
// Backpressure: writers never wait for watchers. Each watcher has a queue of
// Config.WatchBuffer revisions; a write that finds a watcher's queue full
// drops that watcher's subscription instead of blocking, and the watcher,
// once it catches up with what it had queued, re-lists and gets a fresh
// Reset. A slow handler therefore costs itself a resync, never the writers.
type Store struct {
	cfg Config
	log *slog.Logger

	// life guards db against Close: every operation holds it for reading.
	life sync.RWMutex
	db   *pebble.DB

	// mu serializes writes, the revision counter and watcher registration,
	// so every watcher sees every revision after its snapshot exactly once.
	mu   sync.Mutex
	rev  int64
	subs map[*subscriber]struct{}

	closed  chan struct{}
	skipped atomic.Uint64
	resyncs atomic.Uint64
}

var _ registry.SchemaStore = (*Store)(nil)

// New allocates a store; Start opens it. A nil logger means slog.Default().
func New(cfg Config, logger *slog.Logger) *Store {
	if cfg.WatchBuffer == 0 {
		cfg.WatchBuffer = DefaultWatchBuffer
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Store{
		cfg:    cfg,
		log:    logger.With("component", "registry/local"),
		subs:   make(map[*subscriber]struct{}),
		closed: make(chan struct{}),
	}
}

// Open is New followed by Start.
func Open(cfg Config, logger *slog.Logger) (*Store, error) {
	s := New(cfg, logger)
	if err := s.Start(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// Name implements run.Component.
func (s *Store) Name() string { return "registry-local" }

// Start opens the Pebble directory and loads the revision counter.
func (s *Store) Start(context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	select {
	case <-s.closed:
		return errors.New("registry/local: a closed store cannot be reopened; use New")
	default:
	}
	db, err := pebble.Open(s.cfg.Dir, &pebble.Options{Logger: pebblelog.Logger{Log: s.log}})
	if err != nil {
		return fmt.Errorf("registry/local: open %s: %w", s.cfg.Dir, err)
	}
	var rev int64
	v, closer, err := db.Get(revisionKey)
	switch {
	case err == nil:
		if len(v) == 8 {
			rev = int64(binary.BigEndian.Uint64(v))
		} else {
			err = fmt.Errorf("registry/local: %s: revision counter is %d bytes, want 8", s.cfg.Dir, len(v))
		}
		_ = closer.Close()
	case errors.Is(err, pebble.ErrNotFound):
		err = nil
	}
	if err != nil {
		_ = db.Close()
		return err
	}
	s.life.Lock()
	s.db, s.rev = db, rev
	s.life.Unlock()
	return nil
}

// Stop implements run.Stopper.
func (s *Store) Stop(context.Context) error { return s.Close() }

// Close ends all watches (they return ErrClosed) and closes the directory.
// It is safe to call more than once.
func (s *Store) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.db == nil {
		return nil
	}
	close(s.closed)
	err := s.db.Close()
	s.db = nil
	return err
}

// Skipped counts stored values that were ignored because they did not
// decode to valid schema objects.
func (s *Store) Skipped() uint64 { return s.skipped.Load() }

// Resyncs counts the times a watcher was dropped for falling behind and
// re-listed.
func (s *Store) Resyncs() uint64 { return s.resyncs.Load() }

// Revision is the store's current revision.
func (s *Store) Revision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

func dbKey(k registry.Key) []byte { return []byte(schemaPrefix + codec.Path(k)) }

// reader is what Get and List need from a DB or a snapshot.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// decode turns a stored value into an object, or counts it as skipped.
func (s *Store) decode(key, value []byte) (registry.Object, bool) {
	k, err := codec.Parse(string(key[len(schemaPrefix):]))
	if err == nil {
		var m proto.Message
		if m, err = codec.Decode(k, value); err == nil {
			return registry.Object{Key: k, Revision: registry.Metadata(m).GetModRevision(), Message: m}, true
		}
	}
	s.skipped.Add(1)
	s.log.Warn("skipping invalid schema value", "key", string(key), "err", err)
	return registry.Object{}, false
}

func get(s *Store, r reader, k registry.Key) (registry.Object, error) {
	v, closer, err := r.Get(dbKey(k))
	if errors.Is(err, pebble.ErrNotFound) {
		return registry.Object{}, fmt.Errorf("%s: %w", k, registry.ErrNotFound)
	}
	if err != nil {
		return registry.Object{}, fmt.Errorf("registry/local: get %s: %w", k, err)
	}
	defer func() { _ = closer.Close() }()
	obj, ok := s.decode(dbKey(k), v)
	if !ok {
		return registry.Object{}, fmt.Errorf("registry/local: %s: stored value is not a valid schema object", k)
	}
	return obj, nil
}

// scan decodes every valid object under prefix, in key order.
func scan(s *Store, r reader, prefix string) ([]registry.Object, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("registry/local: scan %s: %w", prefix, err)
	}
	var out []registry.Object
	for ok := it.First(); ok; ok = it.Next() {
		if obj, ok := s.decode(it.Key(), it.Value()); ok {
			out = append(out, obj)
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("registry/local: scan %s: %w", prefix, err)
	}
	return out, nil
}

// prefixEnd is the smallest key greater than every key starting with p
// (p ends in '/', so bumping the last byte never overflows).
func prefixEnd(p string) []byte {
	b := []byte(p)
	b[len(b)-1]++
	return b
}

// open returns the db with life held for reading; call the returned func
// when done.
func (s *Store) open() (*pebble.DB, func(), error) {
	s.life.RLock()
	if s.db == nil {
		s.life.RUnlock()
		return nil, nil, ErrClosed
	}
	return s.db, s.life.RUnlock, nil
}

// Get implements registry.Reader.
func (s *Store) Get(_ context.Context, k registry.Key) (registry.Object, error) {
	if err := registry.ValidateKey(k); err != nil {
		return registry.Object{}, err
	}
	db, done, err := s.open()
	if err != nil {
		return registry.Object{}, err
	}
	defer done()
	return get(s, db, k)
}

// List implements registry.Reader.
func (s *Store) List(_ context.Context, kind registry.Kind, group string) ([]registry.Object, error) {
	if !kind.Valid() {
		return nil, &registry.InvalidArgumentError{Field: "kind", Reason: fmt.Sprintf("unknown kind %d", int(kind))}
	}
	p := schemaPrefix + codec.KindPrefix(kind)
	if kind != registry.KindGroup && group != "" {
		if err := registry.ValidateKey(registry.Key{Kind: kind, Group: group, Name: "x"}); err != nil {
			return nil, err
		}
		p = schemaPrefix + codec.MembersPrefix(kind, group)
	}
	db, done, err := s.open()
	if err != nil {
		return nil, err
	}
	defer done()
	objs, err := scan(s, db, p)
	if objs == nil && err == nil {
		objs = []registry.Object{}
	}
	return objs, err
}

// prepare validates m and returns its key and a copy to stamp and store.
func prepare(m proto.Message) (registry.Key, proto.Message, error) {
	if err := registry.Validate(m); err != nil {
		return registry.Key{}, nil, err
	}
	k, _ := registry.KeyOf(m)
	m = proto.Clone(m)
	registry.Prepare(m)
	registry.SetUpdatedAt(m, timestamppb.Now())
	return k, m, nil
}

// Create implements registry.Writer.
func (s *Store) Create(ctx context.Context, m proto.Message) (int64, error) {
	return s.put(ctx, m, true)
}

// Update implements registry.Writer.
func (s *Store) Update(ctx context.Context, m proto.Message) (int64, error) {
	return s.put(ctx, m, false)
}

func (s *Store) put(_ context.Context, in proto.Message, create bool) (int64, error) {
	k, m, err := prepare(in)
	if err != nil {
		return 0, err
	}
	db, done, err := s.open()
	if err != nil {
		return 0, err
	}
	defer done()
	s.mu.Lock()
	defer s.mu.Unlock()
	found := map[registry.Key]proto.Message{}
	for _, dk := range registry.Dependencies(k, m) {
		dep, err := get(s, db, dk)
		switch {
		case err == nil:
			found[dk] = dep.Message
		case !errors.Is(err, registry.ErrNotFound):
			return 0, err
		}
	}
	if err := registry.CheckDependencies(k, m, found); err != nil {
		return 0, err
	}
	old, err := get(s, db, k)
	exists := err == nil
	if err != nil && !errors.Is(err, registry.ErrNotFound) {
		return 0, err
	}
	if create && exists {
		return 0, fmt.Errorf("%s: %w", k, registry.ErrAlreadyExists)
	}
	if !create && !exists {
		return 0, fmt.Errorf("%s: %w", k, registry.ErrNotFound)
	}
	rev := s.rev + 1
	createRev := rev
	if exists {
		createRev = registry.Metadata(old.Message).GetCreateRevision()
		if err := registry.CheckUpdate(old.Message, m); err != nil {
			return 0, err
		}
	}
	registry.Stamp(m, createRev, rev)
	data, err := proto.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("registry/local: marshal %s: %w", k, err)
	}
	b := db.NewBatch()
	_ = b.Set(dbKey(k), data, nil)
	if err := s.commit(b, rev); err != nil {
		return 0, fmt.Errorf("registry/local: write %s: %w", k, err)
	}
	s.publish(rev, []registry.Event{{Type: registry.EventPut, Object: registry.Object{Key: k, Revision: rev, Message: m}}})
	return rev, nil
}

// commit writes b plus the new revision with one synced write and advances
// the counter. Callers hold mu.
func (s *Store) commit(b *pebble.Batch, rev int64) error {
	defer func() { _ = b.Close() }()
	var enc [8]byte
	binary.BigEndian.PutUint64(enc[:], uint64(rev))
	_ = b.Set(revisionKey, enc[:], nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	s.rev = rev
	return nil
}

// Delete implements registry.Writer.
func (s *Store) Delete(_ context.Context, k registry.Key) (int64, error) {
	if err := registry.ValidateKey(k); err != nil {
		return 0, err
	}
	if k.Kind == registry.KindGroup {
		_, rev, err := s.deleteGroup(k.Name, registry.DeleteGroupOptions{})
		return rev, err
	}
	db, done, err := s.open()
	if err != nil {
		return 0, err
	}
	defer done()
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := get(s, db, k)
	if err != nil {
		return 0, err
	}
	rev := s.rev + 1
	b := db.NewBatch()
	_ = b.Delete(dbKey(k), nil)
	if err := s.commit(b, rev); err != nil {
		return 0, fmt.Errorf("registry/local: delete %s: %w", k, err)
	}
	old.Revision = rev
	s.publish(rev, []registry.Event{{Type: registry.EventDelete, Object: old}})
	return rev, nil
}

// DeleteGroup implements registry.GroupDeleter; a forced delete removes the
// group and its members in one batch at one revision.
func (s *Store) DeleteGroup(_ context.Context, name string, opts registry.DeleteGroupOptions) (*databasev1.SchemaInfo, error) {
	info, _, err := s.deleteGroup(name, opts)
	return info, err
}

func (s *Store) deleteGroup(name string, opts registry.DeleteGroupOptions) (*databasev1.SchemaInfo, int64, error) {
	if opts.DataOnly {
		return nil, 0, fmt.Errorf("group %q: data_only delete: %w", name, registry.ErrUnimplemented)
	}
	gk := registry.GroupKey(name)
	if err := registry.ValidateKey(gk); err != nil {
		return nil, 0, err
	}
	db, done, err := s.open()
	if err != nil {
		return nil, 0, err
	}
	defer done()
	s.mu.Lock()
	defer s.mu.Unlock()
	gobj, err := get(s, db, gk)
	if err != nil {
		return nil, 0, err
	}
	var members []registry.Object
	var keys []registry.Key
	for _, kind := range registry.MemberKinds {
		objs, err := scan(s, db, schemaPrefix+codec.MembersPrefix(kind, name))
		if err != nil {
			return nil, 0, err
		}
		for _, o := range objs {
			members = append(members, o)
			keys = append(keys, o.Key)
		}
	}
	info := registry.SchemaInfo(keys)
	if opts.DryRun {
		return info, 0, nil
	}
	if !opts.Force && len(members) > 0 {
		return nil, 0, registry.NonEmptyGroupError(name, info)
	}
	rev := s.rev + 1
	b := db.NewBatch()
	events := make([]registry.Event, 0, len(members)+1)
	for _, kind := range registry.MemberKinds {
		// A range delete also removes undecodable values under the prefix.
		p := schemaPrefix + codec.MembersPrefix(kind, name)
		_ = b.DeleteRange([]byte(p), prefixEnd(p), nil)
	}
	_ = b.Delete(dbKey(gk), nil)
	if err := s.commit(b, rev); err != nil {
		return nil, 0, fmt.Errorf("registry/local: delete group %q: %w", name, err)
	}
	for _, o := range append(members, gobj) {
		o.Revision = rev
		events = append(events, registry.Event{Type: registry.EventDelete, Object: o})
	}
	s.publish(rev, events)
	return info, rev, nil
}
