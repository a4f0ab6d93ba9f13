package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	v3rpc "go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/banyand-io/banyand/pkg/registry"
)

// Backoff between failed re-lists, so an unreachable etcd is not hammered.
const (
	schemaMinBackoff = 20 * time.Millisecond
	schemaMaxBackoff = 2 * time.Second
)

var errSchemaWatchClosed = errors.New("watch channel closed")

// Watch implements registry.Watcher: list the prefix at revision R, hand the
// handler the decoded snapshot, watch from R+1 and apply each revision's
// events in order. When the watch is compacted away or its channel closes
// (etcd restarted, leader lost) it lists again and the handler gets a fresh
// Reset. Values that are not valid schema objects are skipped (Skipped).
func (s *Store) Watch(ctx context.Context, h registry.Handler) error {
	backoff := schemaMinBackoff
	for {
		rev, err := s.reset(ctx, h)
		if err == nil {
			var progressed bool
			progressed, err = s.follow(ctx, h, rev)
			if progressed || errors.Is(err, v3rpc.ErrCompacted) {
				backoff = schemaMinBackoff
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.resyncs.Add(1)
		s.log.Warn("schema watch lost; listing again", "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, schemaMaxBackoff)
	}
}

// reset lists everything and delivers it as one snapshot; nothing reaches
// the handler unless the whole list was read.
func (s *Store) reset(ctx context.Context, h registry.Handler) (int64, error) {
	resp, err := s.client.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", s.prefix, err)
	}
	objs := make([]registry.Object, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if obj, ok := s.decode(schemaKV{kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision}); ok {
			objs = append(objs, obj)
		}
	}
	h.Reset(objs, resp.Header.Revision)
	return resp.Header.Revision, nil
}

// follow applies events after rev until the watch ends; progressed says
// whether any response arrived (to tell a flapping watch from a working one).
func (s *Store) follow(ctx context.Context, h registry.Handler, rev int64) (progressed bool, err error) {
	// RequireLeader makes a partitioned member end the watch instead of
	// leaving it silently stale.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := s.client.Watch(wctx, s.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithPrevKV())
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return progressed, err
		}
		progressed = true
		evs := resp.Events
		// A transaction's events share one revision: deliver them together.
		for i := 0; i < len(evs); {
			r := evs[i].Kv.ModRevision
			j := i
			var batch []registry.Event
			for ; j < len(evs) && evs[j].Kv.ModRevision == r; j++ {
				if ev, ok := s.event(evs[j]); ok {
					batch = append(batch, ev)
				}
			}
			if len(batch) > 0 {
				h.Apply(r, batch)
			}
			i = j
		}
	}
	if ctx.Err() != nil {
		return progressed, ctx.Err()
	}
	return progressed, errSchemaWatchClosed
}

// event converts an etcd event. A put of an invalid value over a valid one
// becomes a delete, so watchers agree with Get and List, which skip it.
func (s *Store) event(ev *clientv3.Event) (registry.Event, bool) {
	var prev *registry.Object
	if p := ev.PrevKv; p != nil {
		// Decode quietly: a bad previous value was counted when it was put.
		kv := schemaKV{p.Key, p.Value, p.CreateRevision, p.ModRevision}
		if obj, ok := s.decodeQuiet(kv); ok {
			prev = &obj
		}
	}
	kv := ev.Kv
	if ev.Type == mvccpb.DELETE {
		if prev == nil {
			// Never delivered as a put, or the key is not ours.
			return registry.Event{}, false
		}
		prev.Revision = kv.ModRevision
		return registry.Event{Type: registry.EventDelete, Object: *prev}, true
	}
	obj, ok := s.decode(schemaKV{kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision})
	if ok {
		return registry.Event{Type: registry.EventPut, Object: obj}, true
	}
	if prev != nil {
		prev.Revision = kv.ModRevision
		return registry.Event{Type: registry.EventDelete, Object: *prev}, true
	}
	return registry.Event{}, false
}
