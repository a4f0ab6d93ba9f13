package pub

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub/internal/sendq"
	"github.com/banyand-io/banyand/pkg/route"
)

// Broadcast sends payload once to every live node (the group must be
// known) and waits for each node's reply until ctx is done. A
// request belongs to its node: it is never re-placed, and a node that is
// down, fails it or does not answer in time gets a Reply with Err set. The
// request's deadline is ctx's, or BroadcastTimeout if ctx has none. The
// error result is for failures before anything was sent (closed client,
// unknown group, no nodes).
func (c *Client) Broadcast(ctx context.Context, topic queue.Topic, group string, payload []byte) ([]queue.Reply, error) {
	return c.Ask(ctx, topic, group, func(string) []byte { return payload })
}

// Ask implements queue.Asker: Broadcast with payload(node) for each node.
func (c *Client) Ask(ctx context.Context, topic queue.Topic, group string, payload func(node string) []byte) ([]queue.Reply, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("queue/pub: broadcast to %q: client %w", topic, queue.ErrClosed)
	}
	t := c.place.Current()
	if _, ok := t.Group(group); !ok {
		return nil, fmt.Errorf("queue/pub: broadcast to %q: %w: %q", topic, route.ErrUnknownGroup, group)
	}
	// Every live node is asked, not only the group's current owners: a
	// shard's data stays where it was written, and failovers and
	// rebalancing leave some of it on nodes that no longer own the shard.
	members := t.Members()
	if len(members) == 0 {
		return nil, fmt.Errorf("queue/pub: broadcast to %q for group %q: %w", topic, group, queue.ErrNoNodes)
	}
	names := make([]string, len(members))
	for i, n := range members {
		names[i] = n.Name
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(c.cfg.BroadcastTimeout)
	}
	key := &sendq.Key{Topic: topic, Group: group}
	msgs := make([]msg, len(names))
	replies := make([]queue.Reply, len(names))
	for i, name := range names {
		m := &msgs[i]
		replies[i].Node = name
		payload := payload(name)
		if uint64(len(payload)) > math.MaxUint32 { // Head.Plen; far over any batch cap anyway
			replies[i].Err = fmt.Errorf("queue/pub: broadcast to %q: %d byte payload: %w", topic, len(payload), queue.ErrInvalidMessage)
			continue
		}
		m.Key, m.Plen, m.Deadline = key, uint32(len(payload)), deadline.UnixNano()
		m.X = &sendq.Extra{Pinned: true, Node: name, Payload: payload}
		if _, err := c.publish(ctx, nil, &m.Head, payload, m); err != nil {
			replies[i].Err = err
			m.Resolve(err, nil)
		}
	}
	for i := range msgs {
		if replies[i].Err != nil {
			continue
		}
		if err := msgs[i].Future().Get(ctx); err != nil {
			replies[i].Err = err
			continue
		}
		replies[i].Payload = msgs[i].X.Reply
	}
	return replies, nil
}
