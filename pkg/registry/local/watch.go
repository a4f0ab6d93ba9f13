package local

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/banyand-io/banyand/pkg/registry"
)

// revision is one write as queued for a watcher.
type revision struct {
	rev    int64
	events []registry.Event
}

// subscriber is one watcher's queue. lost is closed (and the subscriber
// dropped) when a write finds ch full.
type subscriber struct {
	ch   chan revision
	lost chan struct{}
}

// publish queues a write for every watcher without ever blocking: a full
// queue drops its watcher, which resyncs. Callers hold mu. The events'
// messages are shared; watchers clone them before handing them out.
func (s *Store) publish(rev int64, events []registry.Event) {
	for sub := range s.subs {
		select {
		case sub.ch <- revision{rev, events}:
		default:
			delete(s.subs, sub)
			close(sub.lost)
		}
	}
}

// Watch implements registry.Watcher. It returns ctx.Err() when ctx is done
// and ErrClosed when the store is closed.
func (s *Store) Watch(ctx context.Context, h registry.Handler) error {
	for {
		sub, objs, rev, err := s.subscribe()
		if err != nil {
			return err
		}
		h.Reset(objs, rev)
		err = s.follow(ctx, h, sub)
		s.unsubscribe(sub)
		if err != nil {
			return err
		}
		s.resyncs.Add(1)
		s.log.Warn("schema watcher fell behind; listing again", "buffer", s.cfg.WatchBuffer)
	}
}

// subscribe registers a watcher and takes the snapshot it starts from, both
// under mu, so the first queued revision is the one after the snapshot.
func (s *Store) subscribe() (*subscriber, []registry.Object, int64, error) {
	db, done, err := s.open()
	if err != nil {
		return nil, nil, 0, err
	}
	defer done()
	sub := &subscriber{ch: make(chan revision, s.cfg.WatchBuffer), lost: make(chan struct{})}
	s.mu.Lock()
	snap := db.NewSnapshot()
	rev := s.rev
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	defer func() { _ = snap.Close() }()
	objs, err := scan(s, snap, schemaPrefix)
	if err != nil {
		s.unsubscribe(sub)
		return nil, nil, 0, err
	}
	if objs == nil {
		objs = []registry.Object{}
	}
	return sub, objs, rev, nil
}

func (s *Store) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.mu.Unlock()
}

// follow applies queued revisions until ctx is done, the store closes
// (errors) or the subscriber is dropped (nil: resync).
func (s *Store) follow(ctx context.Context, h registry.Handler, sub *subscriber) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return ErrClosed
		case <-sub.lost:
			return nil
		case r := <-sub.ch:
			events := make([]registry.Event, len(r.events))
			for i, ev := range r.events {
				ev.Object.Message = proto.Clone(ev.Object.Message)
				events[i] = ev
			}
			h.Apply(r.rev, events)
		}
	}
}
