package pub

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub/internal/sendq"
)

// msg is a published message as the client routes it; its queueing,
// settling and reuse are sendq's.
type msg = sendq.Msg

// publisher implements queue.BatchPublisher. It may be used concurrently,
// though one client write stream uses it from one goroutine.
type publisher struct {
	c       *Client
	own     *sendq.Owner // counts its unresolved messages; its number picks their lanes
	timeout time.Duration
	// route caches the last topic and group's key and shard → primary
	// node mapping: a client write stream mostly writes one pair, and one
	// load and a few compares then do what the router's maps would.
	route atomic.Pointer[routeCache]
}

var _ queue.BatchPublisher = (*publisher)(nil)

// Publish routes msg to its shard's node and queues it there; see Client
// for when it blocks. The returned future fails with queue.ErrDeadline if
// no node acks the message within the publisher's timeout.
func (p *publisher) Publish(ctx context.Context, topic queue.Topic, qm queue.Message) (queue.Future, error) {
	if !p.own.Admit() {
		return queue.Future{}, fmt.Errorf("queue/pub: publish to %q: publisher %w", topic, queue.ErrClosed)
	}
	if uint64(len(qm.Payload)) > math.MaxUint32 { // Head.Plen; far over any batch cap anyway
		p.own.Finish(1)
		return queue.Future{}, fmt.Errorf("queue/pub: publish to %q: %d byte payload: %w", topic, len(qm.Payload), queue.ErrInvalidMessage)
	}
	c := p.c
	rc := p.cache(c.place.Current(), nil, topic, qm.Group)
	h := sendq.Head{
		Key: rc.key, Shard: qm.Shard, Plen: uint32(len(qm.Payload)),
		Deadline: c.now() + int64(p.timeout),
	}
	if rc.replicated {
		return c.publishCopies(ctx, p, h, qm.Payload)
	}
	// The common case: the shard's primary is up and has room. Anything
	// else (no such node, a full budget, the node just left) takes the
	// general path, which routes around, waits or reports.
	if int(h.Shard) < len(rc.shards) && !c.closed.Load() {
		if n := rc.shards[h.Shard]; n != nil && !n.down.Load() {
			f, _, queued, err := n.enqueue(&h, qm.Payload, nil)
			switch {
			case err != nil:
				p.own.Finish(1)
				return queue.Future{}, err
			case queued:
				return f, nil
			}
		}
	}
	f, err := c.publish(ctx, p, &h, qm.Payload, nil)
	if err != nil {
		p.own.Finish(1) // nothing was queued and no future handed out
		return queue.Future{}, err
	}
	return f, nil
}

// Close waits until every message this publisher accepted is acked or
// failed. Messages fail by their deadline at the latest, so it is bounded
// by the publisher's timeout (plus one tick).
func (p *publisher) Close() error {
	p.own.Close()
	return nil
}
