package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// follower is told what one prefix holds, as follow reads it.
type follower interface {
	// listed replaces everything known with kvs: the whole prefix at rev.
	listed(rev int64, kvs []*mvccpb.KeyValue)
	// changed applies the events of one watch response, whole revisions
	// up to rev, in order.
	changed(rev int64, evs []*clientv3.Event)
}

// followConfig is how follow reaches etcd and backs off.
type followConfig struct {
	cli                *clientv3.Client
	log                *slog.Logger
	prefix             string
	retryMin, retryMax time.Duration
	// relists counts the lists after the first.
	relists *atomic.Int64
}

// follow lists prefix at a revision R, watches from R+1, and lists again
// when the watch is compacted away, cancelled, closed or loses its leader,
// backing off between failed attempts, until ctx is done; it then returns
// ctx.Err(). It never misses a change for long and never applies one twice.
func follow(ctx context.Context, c followConfig, f follower) error {
	bo := newNodeBackoff(c.retryMin, c.retryMax)
	for first := true; ; first = false {
		if !first && c.relists != nil {
			c.relists.Add(1)
		}
		resp, err := c.cli.Get(ctx, c.prefix, clientv3.WithPrefix())
		if err == nil {
			f.listed(resp.Header.Revision, resp.Kvs)
			var progressed bool
			progressed, err = watchFrom(ctx, c, resp.Header.Revision, f)
			if progressed {
				bo.reset()
			}
		} else {
			err = fmt.Errorf("list %s: %w", c.prefix, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.Warn("watch interrupted; listing again", "prefix", c.prefix, "err", err)
		if !bo.wait(ctx) {
			return ctx.Err()
		}
	}
}

// watchFrom applies changes after rev until the watch ends; it always
// returns an error saying why, and whether any response arrived.
func watchFrom(ctx context.Context, c followConfig, rev int64, f follower) (progressed bool, _ error) {
	// WithRequireLeader ends the watch when the member loses its leader,
	// rather than leaving us silently behind a partitioned member.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := c.cli.Watch(wctx, c.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithPrevKV())
	for resp := range wch {
		switch {
		case resp.CompactRevision != 0:
			return progressed, fmt.Errorf("watch from revision %d: compacted up to %d", rev+1, resp.CompactRevision)
		case resp.Err() != nil:
			return progressed, fmt.Errorf("watch: %w", resp.Err())
		case resp.Canceled:
			return progressed, fmt.Errorf("watch canceled: %s", resp.CancelReason)
		}
		progressed = true
		if len(resp.Events) == 0 {
			continue // progress notification
		}
		// One response holds whole revisions (fragmenting is off), so
		// applying it at once keeps every update a consistent snapshot.
		f.changed(resp.Header.Revision, resp.Events)
	}
	return progressed, errors.New("watch channel closed")
}
