package pub

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub/internal/sendq"
	"github.com/banyand-io/banyand/pkg/route"
)

// errUnderReplicated settles a copy given up because every live node that
// could take it already holds a copy of the same message. The message's
// future does not fail for it (see Client).
var errUnderReplicated = errors.New("no live node without a copy of this message")

// replicas ties the copies of one replicated message to the future the
// caller holds. Each copy is a msg of its own (the set its Sink, no
// Owner) that travels, fails over and resolves like any message; Settled
// folds the copies' outcomes into the parent. Only messages of groups
// with replicas pay for this.
type replicas struct {
	parent *msg // the caller's future, counted by its publisher's Owner

	// mu guards the fields below; it is never held while taking another lock.
	mu     sync.Mutex
	copies []*msg
	// holders[i] is the node copy i is queued on, in flight to or acked
	// by; "" once it was given up. Re-placement keeps copies on distinct nodes.
	holders []string
	left    int // copies not yet settled
}

func (r *replicas) index(m *msg) int { return slices.Index(r.copies, m) }

// repOf returns the replica set of a copy of a replicated message, or nil.
func repOf(m *msg) *replicas {
	if m.X == nil {
		return nil
	}
	r, _ := m.X.Sink.(*replicas)
	return r
}

// Settled records a settled copy. The first real failure fails the
// message; a copy given up for lack of nodes counts as done.
func (r *replicas) Settled(m *msg, err error) {
	under := errors.Is(err, errUnderReplicated)
	r.mu.Lock()
	r.left--
	left := r.left
	if under {
		r.holders[r.index(m)] = ""
	}
	r.mu.Unlock()
	switch {
	case err != nil && !under:
		r.parent.Resolve(err, nil)
	case left == 0:
		r.parent.Resolve(nil, nil)
	}
}

// holder returns copy m's node and the nodes holding its other copies.
func (r *replicas) holder(m *msg) (cur string, others []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.index(m)
	for j, h := range r.holders {
		if j != i && h != "" {
			others = append(others, h)
		}
	}
	return r.holders[i], others
}

func (r *replicas) place(m *msg, node string) {
	r.mu.Lock()
	r.holders[r.index(m)] = node
	r.mu.Unlock()
}

// publishCopies publishes a message of a replicated group: one copy to
// each node of its shard's Nodes, each waiting for room as Client says.
// If a copy cannot be queued, the message fails; copies already queued
// are still delivered (at least once, and writes are idempotent).
func (c *Client) publishCopies(ctx context.Context, p *publisher, tmpl sendq.Head, payload []byte) (queue.Future, error) {
	t := c.place.Current()
	ns, err := t.Nodes(tmpl.Group, tmpl.Shard)
	if err != nil {
		p.own.Finish(1)
		return queue.Future{}, routeErr(&tmpl, err)
	}
	parent := &msg{Head: tmpl}
	r := &replicas{parent: parent, left: len(ns), copies: make([]*msg, len(ns)), holders: make([]string, len(ns))}
	key := &sendq.Key{Topic: tmpl.Topic, Group: tmpl.Group} // copies count towards no publisher
	for i, rn := range ns {
		cp := &msg{Head: tmpl}
		cp.Key, cp.X = key, &sendq.Extra{Sink: r, Payload: payload}
		r.copies[i] = cp
		r.holders[i] = rn.Name
	}
	if g, ok := t.Group(tmpl.Group); ok && int(g.Replicas)+1 > len(ns) {
		// Fewer live nodes than copies wanted: the table caps the copies.
		c.underReplicated.Add(int64(int(g.Replicas) + 1 - len(ns)))
	}
	for i, cp := range r.copies {
		if _, err := c.publish(ctx, nil, &cp.Head, payload, cp); err != nil {
			for _, rest := range r.copies[i:] {
				rest.Settle(err, nil) // never queued: nothing to account for
			}
			parent.Resolve(err, nil)
			return queue.Future{}, err
		}
	}
	return parent.Future(), nil
}

// routeCopy picks the node for copy m: the node it was placed on, unless
// that node is down, gone or failed it (m.Avoid); then the first live node
// of the shard's failover order holding no other copy of the message. If
// every live node holds one, the copy is given up (counted as
// under-replication) and routeCopy returns neither node nor error. The
// last copy standing is never given up: like an unreplicated message it
// waits on the first node of the order for a node to come back.
func (c *Client) routeCopy(t *route.Table, nodes map[string]*node, m *msg, cache map[orderKey][]route.Node) (*node, error) {
	r := repOf(m)
	cur, others := r.holder(m)
	if n := nodes[cur]; n != nil && !n.down.Load() && cur != m.Avoid() {
		return n, nil
	}
	order, err := c.order(t, &m.Head, cache)
	if err != nil {
		return nil, err
	}
	var fallback *node
	for _, rn := range order {
		n := nodes[rn.Name]
		if n == nil || slices.Contains(others, rn.Name) {
			continue
		}
		if fallback == nil {
			fallback = n
		}
		if rn.Name != m.Avoid() && !n.down.Load() {
			r.place(m, n.name)
			return n, nil
		}
	}
	if len(others) > 0 {
		if m.Resolve(errUnderReplicated, nil) {
			c.underReplicated.Add(1)
		}
		return nil, nil
	}
	if fallback == nil {
		return nil, routeErr(&m.Head, route.ErrNoNodes)
	}
	r.place(m, fallback.name)
	return fallback, nil
}
