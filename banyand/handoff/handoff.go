// Package handoff keeps a data node's hints: writes of replicated groups
// that the liaison could not copy to as many nodes as their group asks
// for (queue.TopicHint carrying a cluster.v1.Hint; see pkg/queue/pub's
// HintCopies). A hint is durable before it is acknowledged, and so before
// the client's write is; the hand-off loop then publishes each hint's
// write again to every node of its shard's placement once enough nodes
// are live, and forgets the hint once every copy was acknowledged.
//
// While a node keeps hints of a (group, shard) it holds writes that no
// other node may hold, so it marks the pair in the registry (Marker)
// before it acknowledges the first hint of it, and clears the mark once
// the last one was handed off: a query that cannot reach a marked node
// fails rather than answer from the other holders (docs/design/reads.md).
package handoff

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/pebblelog"
	"github.com/banyand-io/banyand/pkg/queue"
)

// Defaults for a Config whose fields are zero.
const (
	DefaultInterval = time.Second
	DefaultMaxBatch = 512
	DefaultTimeout  = 30 * time.Second
)

// Config configures a Store.
type Config struct {
	// Dir holds the hints (a Pebble database); created if missing.
	Dir string
	// Topics are the write topics a hint may carry; a hint naming another
	// is refused as invalid.
	Topics []queue.Topic
	// Interval is how often the hand-off loop tries the hints it holds.
	Interval time.Duration
	// MaxBatch bounds the hints published in one round.
	MaxBatch int
	// Timeout bounds one hand-off publish.
	Timeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Marker records in the registry which (group, shard) pairs this node
// keeps hints of (pkg/registry/etcd.HolderRecorder).
type Marker interface {
	// Mark returns once the pair is durably marked.
	Mark(ctx context.Context, group string, shard uint32) error
	// Clear removes the pair's mark.
	Clear(ctx context.Context, group string, shard uint32) error
}

// Deps are the store's collaborators.
type Deps struct {
	// Queue publishes handed-off writes to the data nodes. It must fail a
	// write that cannot get all its copies (pub.FailCopies), so that a
	// hint is forgotten only once its write is fully replicated.
	Queue  queue.Client
	Marker Marker
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Stats are the store's counters.
type Stats struct {
	Pending   int64 // hints kept, not yet handed off
	Received  int64 // hints acknowledged since start
	Delivered int64 // hints whose write every node of its placement acknowledged
	Dropped   int64 // hints whose write a node refused as invalid, or whose group is gone: never deliverable
}

type pair struct {
	group string
	shard uint32
}

// Store keeps hints and hands them off. It is the queue.Listener of
// queue.TopicHint and a run component: Start opens it, Serve runs the
// hand-off loop, Stop ends the loop and closes it.
type Store struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	topics map[string]bool

	db   *pebble.DB
	quit chan struct{} // closed by Stop: the loop ends its round early
	done chan struct{} // closed when Serve returns

	// mu serializes the marks and clears with the counts they follow, so
	// a pair is never cleared while a hint of it is being kept, and
	// guards the fields below. Marks and clears are etcd round trips under
	// it; hints are rare (a node away), so the wait is acceptable.
	mu      sync.Mutex
	seq     uint64        // the last hint key used
	pending map[pair]int  // hints kept, by pair
	stale   map[pair]bool // pairs with no hint left whose Clear failed
	closed  bool

	received, delivered, dropped, total atomic.Int64
}

// New allocates a store; Start opens it.
func New(cfg Config, deps Deps) *Store {
	cfg = cfg.withDefaults()
	log := deps.Logger
	if log == nil {
		log = slog.Default()
	}
	topics := map[string]bool{}
	for _, t := range cfg.Topics {
		topics[string(t)] = true
	}
	return &Store{cfg: cfg, deps: deps, log: log.With("component", "handoff"), topics: topics,
		quit: make(chan struct{}), done: make(chan struct{}),
		pending: map[pair]int{}, stale: map[pair]bool{}}
}

// Name implements run.Component.
func (s *Store) Name() string { return "handoff" }

// Stats returns the counters.
func (s *Store) Stats() Stats {
	return Stats{Pending: s.total.Load(), Received: s.received.Load(), Delivered: s.delivered.Load(), Dropped: s.dropped.Load()}
}

// Start opens the hint database, counts the hints a previous run left
// and marks their pairs again (a mark is idempotent; one may have been
// cleared by hand meanwhile).
func (s *Store) Start(ctx context.Context) error {
	if s.cfg.Dir == "" {
		return errors.New("handoff: directory is required")
	}
	if s.deps.Queue == nil || s.deps.Marker == nil {
		return errors.New("handoff: queue and marker are required")
	}
	db, err := pebble.Open(s.cfg.Dir, &pebble.Options{Logger: pebblelog.Logger{Log: s.log}})
	if err != nil {
		return fmt.Errorf("handoff: open %s: %w", s.cfg.Dir, err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("handoff: read hints: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		h := &clusterv1.Hint{}
		if err := proto.Unmarshal(it.Value(), h); err == nil {
			s.pending[pair{h.GetGroup(), h.GetShardId()}]++
			s.total.Add(1)
		}
		if len(it.Key()) == 8 {
			s.seq = max(s.seq, binary.BigEndian.Uint64(it.Key()))
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		_ = db.Close()
		return fmt.Errorf("handoff: read hints: %w", err)
	}
	for p := range s.pending {
		if err := s.deps.Marker.Mark(ctx, p.group, p.shard); err != nil {
			_ = db.Close()
			return fmt.Errorf("handoff: mark %s/%d: %w", p.group, p.shard, err)
		}
	}
	s.db = db
	if n := s.total.Load(); n > 0 {
		s.log.Info("hints to hand off", "hints", n, "shards", len(s.pending))
	}
	return nil
}

// Handle implements queue.Listener for queue.TopicHint: it keeps each
// valid hint, synced, and marks its pair first if it is new.
func (s *Store) Handle(ctx context.Context, b queue.Batch) queue.Result {
	errs := make([]error, len(b.Messages))
	var ok []int
	hints := make([]*clusterv1.Hint, len(b.Messages))
	for i, m := range b.Messages {
		h := &clusterv1.Hint{}
		if err := proto.Unmarshal(m, h); err != nil {
			errs[i] = fmt.Errorf("handoff: hint: %w: %w", queue.ErrInvalidMessage, err)
			continue
		}
		if err := s.check(h); err != nil {
			errs[i] = err
			continue
		}
		hints[i] = h
		ok = append(ok, i)
	}
	if len(ok) == 0 {
		return queue.Result{Errs: errs}
	}
	if err := s.keep(ctx, b.Messages, hints, ok); err != nil {
		for _, i := range ok {
			errs[i] = err
		}
	}
	return queue.Result{Errs: errs}
}

func (s *Store) check(h *clusterv1.Hint) error {
	switch {
	case !s.topics[h.GetTopic()]:
		return fmt.Errorf("handoff: hint for topic %q, not a write topic: %w", h.GetTopic(), queue.ErrInvalidMessage)
	case h.GetGroup() == "":
		return fmt.Errorf("handoff: hint without a group: %w", queue.ErrInvalidMessage)
	case len(h.GetPayload()) == 0:
		return fmt.Errorf("handoff: hint without a write: %w", queue.ErrInvalidMessage)
	}
	return nil
}

// keep marks the new pairs of the hints at ok, then writes the hints in
// one synced batch.
func (s *Store) keep(ctx context.Context, raw [][]byte, hints []*clusterv1.Hint, ok []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("handoff: %w", queue.ErrClosed)
	}
	var marked []pair
	for _, i := range ok {
		p := pair{hints[i].GetGroup(), hints[i].GetShardId()}
		if s.pending[p] > 0 || slices.Contains(marked, p) {
			continue
		}
		if err := s.deps.Marker.Mark(ctx, p.group, p.shard); err != nil {
			return fmt.Errorf("handoff: mark %s/%d before keeping its hint: %w", p.group, p.shard, err)
		}
		delete(s.stale, p)
		marked = append(marked, p)
	}
	batch := s.db.NewBatch()
	defer func() { _ = batch.Close() }()
	seq := s.seq
	for _, i := range ok {
		seq++
		if err := batch.Set(binary.BigEndian.AppendUint64(nil, seq), raw[i], nil); err != nil {
			return fmt.Errorf("handoff: keep hint: %w", err)
		}
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("handoff: keep hints: %w", err)
	}
	s.seq = seq
	for _, i := range ok {
		s.pending[pair{hints[i].GetGroup(), hints[i].GetShardId()}]++
	}
	s.total.Add(int64(len(ok)))
	s.received.Add(int64(len(ok)))
	return nil
}
