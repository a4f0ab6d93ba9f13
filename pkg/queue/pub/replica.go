package pub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub/internal/sendq"
	"github.com/banyand-io/banyand/pkg/route"
)

// errUnderReplicated settles a copy given up because every live node that
// could take it already holds a copy of the same message. The message's
// future fails for it only under FailCopies (see Client).
var errUnderReplicated = errors.New("no live node without a copy of this message")

// ErrUnderReplicated fails a message of a replicated group under
// FailCopies when fewer live nodes could take it than it wants copies.
var ErrUnderReplicated = errors.New("queue/pub: fewer live data nodes than the group's copies")

// replicas ties the copies of one replicated message to the future the
// caller holds. Each copy is a msg of its own (the set its Sink, no
// Owner) that travels, fails over and resolves like any message; Settled
// folds the copies' outcomes into the parent. Only messages of groups
// with replicas pay for this.
type replicas struct {
	parent *msg // the caller's future, counted by its publisher's Owner
	policy UnderReplicatedPolicy

	// mu guards the fields below; it is never held while taking another lock.
	mu     sync.Mutex
	copies []*msg
	// holders[i] is the node copy i is queued on, in flight to or acked
	// by; "" once it was given up. Re-placement keeps copies on distinct nodes.
	holders []string
	left    int  // copies (and the hint) not yet settled
	hinted  bool // a hint was made (HintCopies): one a message is enough
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

// Settled records a settled copy or hint. The first real failure fails
// the message; a copy given up for lack of nodes counts as done, except
// under FailCopies.
func (r *replicas) Settled(m *msg, err error) {
	under := errors.Is(err, errUnderReplicated)
	r.mu.Lock()
	r.left--
	left := r.left
	if i := r.index(m); under && i >= 0 {
		r.holders[i] = ""
	}
	r.mu.Unlock()
	switch {
	case under && r.policy == FailCopies:
		r.parent.Resolve(fmt.Errorf("%w: %q message for group %q shard %d", ErrUnderReplicated, m.Topic, m.Group, m.Shard), nil)
	case err != nil && !under:
		r.parent.Resolve(err, nil)
	case left == 0:
		r.parent.Resolve(nil, nil)
	}
}

// hint returns the hint message standing in for the copies of m that no
// live node can take, or nil: under HintCopies, for the first copy of a
// message given up. The hint counts as one more copy to settle, so the
// message succeeds only once it is acked. Its payload is a
// cluster.v1.Hint holding m's payload, which is m's caller's still (the
// message has not succeeded yet).
func (r *replicas) hint(m *msg, payload []byte) (*msg, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.policy != HintCopies || r.hinted {
		return nil, nil
	}
	b, err := proto.Marshal(&clusterv1.Hint{Topic: string(m.Topic), Group: m.Group, ShardId: m.Shard, Payload: payload})
	if err != nil {
		return nil, fmt.Errorf("queue/pub: encode hint for group %q shard %d: %w", m.Group, m.Shard, err)
	}
	r.hinted = true
	r.left++
	h := &msg{Head: sendq.Head{Key: &sendq.Key{Topic: queue.TopicHint, Group: m.Group}, Deadline: m.Deadline, Shard: m.Shard, Plen: uint32(len(b))}}
	h.X = &sendq.Extra{Sink: hintSink{r}, Payload: b}
	return h, nil
}

// hintSink settles a hint into its message's replica set. It is not a
// *replicas, so a hint is routed like a lone message (any live node of
// the shard's order: when a copy is given up, those all hold one).
type hintSink struct{ r *replicas }

func (s hintSink) Settled(m *msg, err error) { s.r.Settled(m, err) }

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
	r := &replicas{parent: parent, policy: c.cfg.UnderReplicated, left: len(ns), copies: make([]*msg, len(ns)), holders: make([]string, len(ns))}
	key := &sendq.Key{Topic: tmpl.Topic, Group: tmpl.Group} // copies count towards no publisher
	for i, rn := range ns {
		cp := &msg{Head: tmpl}
		cp.Key, cp.X = key, &sendq.Extra{Sink: r, Payload: payload}
		r.copies[i] = cp
		r.holders[i] = rn.Name
	}
	var hint *msg
	if g, ok := t.Group(tmpl.Group); ok && int(g.Replicas)+1 > len(ns) {
		// Fewer live nodes than copies wanted: the table caps the copies.
		c.underReplicated.Add(int64(int(g.Replicas) + 1 - len(ns)))
		if r.policy == FailCopies {
			for _, cp := range r.copies {
				cp.Settle(nil, nil) // never queued
			}
			p.own.Finish(1)
			return queue.Future{}, fmt.Errorf("%w: %q message for group %q shard %d: %d live of %d",
				ErrUnderReplicated, tmpl.Topic, tmpl.Group, tmpl.Shard, len(ns), g.Replicas+1)
		}
		if hint, err = r.hint(r.copies[0], payload); err != nil {
			p.own.Finish(1)
			return queue.Future{}, err
		}
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
	if hint != nil {
		if _, err := c.publish(ctx, nil, &hint.Head, hint.Payload(), hint); err != nil {
			parent.Resolve(err, nil) // the copies are on their way; the message fails
			return queue.Future{}, err
		}
	}
	return parent.Future(), nil
}

// routeCopy picks the node for copy m and returns it with the message to
// queue there: m on the node it was placed on, unless that node is down,
// gone or failed it (m.Avoid); else m on the first live node of the
// shard's failover order holding no other copy of the message. If every
// live node holds one, the copy is given up (counted as under-replication)
// and routeCopy returns its hint, routed like a lone message (HintCopies),
// or nothing and no error. The last copy standing is never given up: like
// an unreplicated message it waits on the first node of the order for a
// node to come back.
func (c *Client) routeCopy(t *route.Table, nodes map[string]*node, m *msg, cache map[orderKey][]route.Node) (*node, *msg, error) {
	r := repOf(m)
	cur, others := r.holder(m)
	if n := nodes[cur]; n != nil && !n.down.Load() && cur != m.Avoid() {
		return n, m, nil
	}
	order, err := c.order(t, &m.Head, cache)
	if err != nil {
		return nil, nil, err
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
			return n, m, nil
		}
	}
	if len(others) > 0 {
		h, err := r.hint(m, m.Payload())
		if err != nil {
			return nil, nil, err
		}
		if m.Resolve(errUnderReplicated, nil) {
			c.underReplicated.Add(1)
		}
		if h == nil {
			return nil, nil, nil
		}
		n, err := c.failover(t, nodes, &h.Head, "", cache)
		if err != nil {
			h.Resolve(err, nil)
			return nil, nil, err
		}
		return n, h, nil
	}
	if fallback == nil {
		return nil, nil, routeErr(&m.Head, route.ErrNoNodes)
	}
	r.place(m, fallback.name)
	return fallback, m, nil
}
