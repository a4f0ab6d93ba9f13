package pub

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
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
	if c.closed.Load() {
		return nil, fmt.Errorf("queue/pub: broadcast to %q: client %w", topic, queue.ErrClosed)
	}
	if uint64(len(payload)) > math.MaxUint32 { // msgHead.plen; far over any batch cap anyway
		return nil, fmt.Errorf("queue/pub: broadcast to %q: %d byte payload: %w", topic, len(payload), queue.ErrInvalidMessage)
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
	key := &msgKey{topic: topic, group: group}
	msgs := make([]msg, len(names))
	replies := make([]queue.Reply, len(names))
	for i, name := range names {
		m := &msgs[i]
		m.msgKey, m.plen, m.deadline = key, uint32(len(payload)), deadline.UnixNano()
		m.x = &msgExtra{pinned: true, node: name, payload: payload}
		replies[i].Node = name
		if _, _, err := c.publish(ctx, &m.msgHead, payload, m); err != nil {
			replies[i].Err = err
			m.resolve(err, nil)
		}
	}
	for i := range msgs {
		if replies[i].Err != nil {
			continue
		}
		if err := msgs[i].Wait(ctx, nil); err != nil {
			replies[i].Err = err
			continue
		}
		replies[i].Payload = msgs[i].x.reply
	}
	return replies, nil
}
