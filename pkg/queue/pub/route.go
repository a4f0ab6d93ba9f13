package pub

import (
	"errors"
	"fmt"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub/internal/sendq"
	"github.com/banyand-io/banyand/pkg/route"
)

// route picks m's node in t: its primary, or the first node of its failover
// order that is not marked down, or, if all are down, the first one (the
// message waits there for its node to return or its deadline). p is the
// message's publisher, whose route cache it uses, or nil.
func (c *Client) route(t *route.Table, nodes map[string]*node, p *publisher, m *sendq.Head) (*node, error) {
	if m.Pinned() {
		if n := nodes[m.X.Node]; n != nil && !n.down.Load() {
			return n, nil
		}
		return nil, fmt.Errorf("queue/pub: %q request to node %s: the node is down or gone: %w", m.Topic, m.X.Node, queue.ErrNoNodes)
	}
	if p != nil {
		rc := p.cache(t, nodes, m.Topic, m.Group)
		if int(m.Shard) < len(rc.shards) {
			if n := rc.shards[m.Shard]; n != nil && !n.down.Load() {
				return n, nil
			}
		}
	}
	ns, err := t.Nodes(m.Group, m.Shard)
	if err != nil {
		return nil, routeErr(m, err)
	}
	if n := nodes[ns[0].Name]; n != nil && !n.down.Load() {
		return n, nil
	}
	return c.failover(t, nodes, m, "", nil)
}

// routeCache is a publisher's key for one topic and group and the
// group's shards' primary nodes in one table.
type routeCache struct {
	t          *route.Table
	key        *sendq.Key
	replicated bool    // the group wants copies beyond the primary
	shards     []*node // nil: look it up the slow way
}

// cache returns p's route cache for topic and group in t, building it if
// the last one was for another table, topic or group; nodes are t's
// nodes, or nil to look them up.
func (p *publisher) cache(t *route.Table, nodes map[string]*node, topic queue.Topic, group string) *routeCache {
	rc := p.route.Load()
	if rc != nil && rc.t == t && rc.key.Topic == topic && rc.key.Group == group {
		return rc
	}
	if rc != nil && rc.t == t && rc.key.Group == group {
		// Another topic, same group: the shards stay.
		rc = &routeCache{t: t, key: &sendq.Key{Owner: p.own, Topic: topic, Group: group}, replicated: rc.replicated, shards: rc.shards}
	} else {
		if nodes == nil {
			nodes = p.c.nodesFor(t)
		}
		rc = newRouteCache(t, nodes, &sendq.Key{Owner: p.own, Topic: topic, Group: group})
	}
	p.route.Store(rc)
	return rc
}

func newRouteCache(t *route.Table, nodes map[string]*node, key *sendq.Key) *routeCache {
	rc := &routeCache{t: t, key: key}
	g, ok := t.Group(key.Group)
	if !ok {
		return rc
	}
	rc.replicated = g.Replicas > 0
	rc.shards = make([]*node, g.ShardNum)
	for s := range g.ShardNum {
		if ns, err := t.Nodes(key.Group, s); err == nil {
			rc.shards[s] = nodes[ns[0].Name]
		}
	}
	return rc
}

// orderCache memoizes Table.Order for one re-placement pass.
type orderKey struct {
	group string
	shard uint32
}

func (c *Client) order(t *route.Table, m *sendq.Head, cache map[orderKey][]route.Node) ([]route.Node, error) {
	k := orderKey{m.Group, m.Shard}
	order, ok := cache[k]
	if !ok {
		var err error
		if order, err = t.Order(m.Group, m.Shard); err != nil {
			return nil, routeErr(m, err)
		}
		if cache != nil {
			cache[k] = order
		}
	}
	return order, nil
}

func (c *Client) failover(t *route.Table, nodes map[string]*node, m *sendq.Head, avoid string,
	cache map[orderKey][]route.Node,
) (*node, error) {
	order, err := c.order(t, m, cache)
	if err != nil {
		return nil, err
	}
	var fallback *node
	for _, rn := range order {
		n := nodes[rn.Name]
		if n == nil {
			continue
		}
		if fallback == nil {
			fallback = n
		}
		if rn.Name != avoid && !n.down.Load() {
			return n, nil
		}
	}
	if fallback == nil {
		return nil, fmt.Errorf("queue/pub: %q message for group %q shard %d: %w", m.Topic, m.Group, m.Shard, queue.ErrNoNodes)
	}
	return fallback, nil
}

func routeErr(m *sendq.Head, err error) error {
	if errors.Is(err, route.ErrNoNodes) {
		return fmt.Errorf("queue/pub: %q message for group %q shard %d: %w: %w", m.Topic, m.Group, m.Shard, queue.ErrNoNodes, err)
	}
	return fmt.Errorf("queue/pub: cannot place %q message for group %q shard %d: %w", m.Topic, m.Group, m.Shard, err)
}
