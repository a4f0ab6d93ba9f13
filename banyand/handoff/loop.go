package handoff

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// Serve runs the hand-off loop: every Interval, a round over the oldest
// MaxBatch hints. It returns when ctx is done or Stop was called.
func (s *Store) Serve(ctx context.Context) error {
	defer close(s.done)
	tk := time.NewTicker(s.cfg.Interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return nil
		case <-tk.C:
		}
		if s.total.Load() == 0 && !s.hasStale() {
			continue
		}
		if err := s.round(ctx); err != nil {
			s.log.Warn("hand-off round failed", "err", err)
		}
	}
}

// Stop ends the loop (its round's publishes are given up) and closes the
// database. Hints not yet handed off stay for the next start.
func (s *Store) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.closed || s.db == nil {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.quit)
	select {
	case <-s.done:
	case <-ctx.Done():
		return fmt.Errorf("handoff: stop: the hand-off loop did not end: %w", ctx.Err())
	}
	if n := s.total.Load(); n > 0 {
		s.log.Info("hints left to hand off after a restart", "hints", n)
	}
	return s.db.Close()
}

type kept struct {
	key  []byte
	hint *clusterv1.Hint
	f    queue.Future
}

// round publishes the oldest hints again, each to every node of its
// shard's placement, and forgets those whose every copy was acknowledged.
func (s *Store) round(ctx context.Context) error {
	hints, err := s.oldest()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	p := s.deps.Queue.NewBatchPublisher(s.cfg.Timeout)
	var errs []error
	var done, invalid []kept
	for i := range hints {
		h := hints[i].hint
		hints[i].f, err = p.Publish(ctx, queue.Topic(h.GetTopic()), queue.Message{Group: h.GetGroup(), Shard: h.GetShardId(), Payload: h.GetPayload()})
		switch {
		case errors.Is(err, route.ErrUnknownGroup):
			// The group was deleted, and its data with it.
			invalid = append(invalid, hints[i])
			s.log.Warn("dropping a hint of a group that no longer exists", "group", h.GetGroup(), "shard", h.GetShardId())
		case err != nil:
			errs = append(errs, err)
		}
	}
	for _, k := range hints {
		if k.f.IsZero() {
			continue
		}
		switch err := k.f.Get(ctx); {
		case err == nil:
			done = append(done, k)
		case errors.Is(err, queue.ErrInvalidMessage):
			invalid = append(invalid, k)
			s.log.Error("dropping a hint whose write a data node refused", "group", k.hint.GetGroup(), "shard", k.hint.GetShardId(), "err", err)
		default:
			errs = append(errs, err)
		}
	}
	_ = p.Close()
	if err := s.forget(ctx, done, invalid); err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d hints not handed off yet (they stay): %w", len(errs), len(hints), errs[0])
	}
	return nil
}

// oldest reads up to MaxBatch hints in the order they were kept.
func (s *Store) oldest() ([]kept, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, fmt.Errorf("handoff: read hints: %w", err)
	}
	var out []kept
	for it.First(); it.Valid() && len(out) < s.cfg.MaxBatch; it.Next() {
		h := &clusterv1.Hint{}
		if err := proto.Unmarshal(it.Value(), h); err != nil {
			continue // checked when kept; cannot happen short of disk damage
		}
		out = append(out, kept{key: append([]byte(nil), it.Key()...), hint: h})
	}
	return out, errors.Join(it.Error(), it.Close())
}

// forget deletes the hints handed off (and the undeliverable ones) and
// clears the marks of the pairs left with none.
func (s *Store) forget(ctx context.Context, done, invalid []kept) error {
	if len(done)+len(invalid) == 0 {
		return s.clearStale(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	batch := s.db.NewBatch()
	defer func() { _ = batch.Close() }()
	for _, k := range append(done, invalid...) {
		if err := batch.Delete(k.key, nil); err != nil {
			return fmt.Errorf("handoff: forget hint: %w", err)
		}
	}
	// Not synced: a hint whose delete a crash loses is handed off again,
	// and writes are idempotent.
	if err := batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("handoff: forget hints: %w", err)
	}
	for _, k := range append(done, invalid...) {
		p := pair{k.hint.GetGroup(), k.hint.GetShardId()}
		if s.pending[p]--; s.pending[p] <= 0 {
			delete(s.pending, p)
			s.stale[p] = true
		}
	}
	s.total.Add(-int64(len(done) + len(invalid)))
	s.delivered.Add(int64(len(done)))
	s.dropped.Add(int64(len(invalid)))
	return s.clearStaleLocked(ctx)
}

func (s *Store) hasStale() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stale) > 0
}

func (s *Store) clearStale(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clearStaleLocked(ctx)
}

// clearStaleLocked clears the marks of pairs with no hint left; one that
// fails stays stale and is tried again next round.
func (s *Store) clearStaleLocked(ctx context.Context) error {
	var errs []error
	for p := range s.stale {
		if err := s.deps.Marker.Clear(ctx, p.group, p.shard); err != nil {
			errs = append(errs, fmt.Errorf("handoff: clear mark of %s/%d: %w", p.group, p.shard, err))
			continue
		}
		delete(s.stale, p)
	}
	return errors.Join(errs...)
}
