package pub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub/internal/sendq"
	"github.com/banyand-io/banyand/pkg/route"
)

// Placement is where the client learns which nodes hold a shard and which
// nodes exist. *route.Router satisfies it. Current is called on every
// publish, so it must be cheap (an atomic load).
type Placement interface {
	Current() *route.Table
}

// Deps are the client's collaborators.
type Deps struct {
	Placement Placement
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Observer, if set, is told of every batch sent and acked (metrics).
	Observer Observer
}

// Observer hears of batches as they go: from the send loop for each batch
// written and from the receive loop for each ack. Both are on the hot path
// (once a batch, not a message): implementations must be quick and must
// not block.
type Observer interface {
	// BatchSent: a batch of msgs messages was written to node.
	BatchSent(node string, msgs int)
	// BatchAcked: node acked a batch latency after it was written,
	// whatever the ack said.
	BatchAcked(node string, latency time.Duration)
}

// Client publishes messages to data nodes over cluster.v1 streams. It
// implements queue.Client.
//
// Routing: a message goes to the primary node of its (group, shard) in the
// placement table current at publish time, or, when that node is marked
// down, to the next node of the shard's failover order (Table.Order). The
// client follows node set changes by comparing the table's version on every
// publish and every tick: nodes that left the table stop taking messages,
// their queued messages are re-placed at once, and their in-flight batches
// get RetryBudget to be acked before they are re-placed and the node's
// connection is closed.
//
// No nodes: when the table has no data node at all, a message waits for
// one to appear (Publish blocks, a message taken off a departed node is
// retried every tick) for at most RetryBudget after the table became
// empty, and its deadline; then it fails with queue.ErrNoNodes, and so do
// later messages at once until a node is back. A registry blip, such as
// etcd dropping every node's lease while it was paused, then delays
// writes by the few milliseconds the nodes take to re-register instead of
// failing them.
//
// Replicas: for a group with replicas = r, a message is copied to every
// node of its shard's Table.Nodes (the primary and r replicas), and its
// future succeeds only once every copy was acked, that is durable on each
// node. A copy fails over like a lone message, except that it only moves
// to a node of Table.Order that holds no other copy of the same message.
// When every live node already holds one (fewer live nodes than r+1), the
// copy is given up and the missing copies are counted in
// Stats.UnderReplicated and logged once per tick; Config.UnderReplicated
// says what then becomes of the message: it succeeds with the copies
// possible (GiveUpCopies), or only once a hint holding it is acked by a
// live node of its shard (HintCopies: one hint a message, whatever the
// copies missing), or it fails with ErrUnderReplicated (FailCopies). The last copy standing is never given up: with no live node it
// waits, as a lone message does, until its deadline. The first copy that
// fails for good (deadline, invalid message, close) fails the message;
// copies already queued are still delivered. With replicas = 0 none of
// this runs: a message is one queued msg, as without replication.
//
// Batching: a node's queue (package sendq) is split into a few lanes, each a list of
// batches per topic; a publisher appends to the newest batch of its own
// lane (picked by the publisher's number) while it is under the batch caps,
// so concurrent publishers do not share a lock, and a stream's send loop
// takes the oldest batch of the next non-empty lane whole when its window
// has room, so a batch's payload list is sent as is.
//
// Connections are lazy: a node is dialled when the first message is routed
// to it. Each node gets one gRPC connection, StreamsPerNode streams for
// writes and one for requests (Broadcast), each with its own queue and
// byte budget, so a slow or large query answer never takes a write's
// window slot, trips its stall timer or sits in front of its acks. A
// request stream is stalled only once its requests' deadlines have passed
// too (a live subscriber answers every request by its deadline); the
// node's health (down, the retry budget) follows its write streams.
//
// Backpressure: each node has a budget of MaxBytesPerNode payload bytes,
// counting messages queued for it and messages in flight to it. Publish
// blocks while the budget of the message's node is full (one message is
// always admitted into an empty budget) until room frees up, for at most
// PublishWait, the caller's ctx or the message's deadline, whichever comes
// first; then it returns an error wrapping queue.ErrResourceExhausted (or
// the ctx error, or queue.ErrClosed if the client closes meanwhile).
// A lane reserves budget in chunks (1/64 of MaxBytesPerNode, at most
// 64 KiB) and gives back what it did not use once it is empty or a
// publisher waits for room; reserved bytes count as in use. Messages
// re-placed from a failed node go ahead of new ones: their new node takes
// them up to twice its budget, and those that do not fit wait on the
// retry list, re-placed every tick until their deadline. Until a node
// takes it, a re-placed message stays counted by the budget of the node
// it came off, so a node that keeps failing messages retryably holds its
// publishers back instead of feeding the retry list. Every byte of a
// message not yet settled is so counted by one node: the client as a
// whole holds at most twice MaxBytesPerNode times the number of nodes
// (one message more a node, admitted into an empty budget), plus
// per-message bookkeeping.
//
// Delivery: at least once. A message's future resolves exactly once: nil
// when a node acked it (every copy, for a replicated group), or an error; a
// late ack after a failure is ignored.
type Client struct {
	cfg   Config
	place Placement
	log   *slog.Logger
	obs   Observer // nil: nobody listens
	creds credentials.TransportCredentials

	// ctx parents every goroutine the client starts; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the maintenance loop

	startOnce sync.Once
	closed    atomic.Bool
	closedCh  chan struct{}
	closeOnce sync.Once

	// nodes is the current member set, swapped whole by sync; publish reads
	// it without a lock. synced holds the table version it was built from,
	// plus one (so the zero value means "never synced").
	nodes  atomic.Pointer[map[string]*node]
	synced atomic.Uint64

	// mu serializes node set changes and guards all and stopped.
	mu      sync.Mutex
	all     map[*node]struct{} // members and retiring nodes
	stopped bool

	// retry holds messages that failed retryably; the next tick re-places
	// them, which also paces retries to one per message per tick.
	retryMu sync.Mutex
	retry   []*msg

	// clock is the wall time in unix nanos as of the last tick, so that
	// stamping a message's deadline is a load, not a clock read (which
	// cost ~90 ns a message on our VMs).
	clock atomic.Int64

	// noNodesSince is when the placement table last became empty (unix
	// nano), or 0 while it has data nodes. For RetryBudget after that,
	// messages wait for nodes instead of failing (see awaitNodes).
	noNodesSince atomic.Int64
	awaiting     atomic.Int64 // Publish calls in awaitNodes
	waitingMsgs  atomic.Int64 // messages the last tick kept on the retry list for want of a node

	reconnects, replaced, batches, sent, underReplicated atomic.Int64
	counters                                             sendq.Counters // the node queues' (held, recycled)
	lanes                                                atomic.Uint32  // publishers made, for their lanes
	// underLogged is the underReplicated count last logged (by tick only).
	underLogged int64
}

var _ queue.Client = (*Client)(nil)

// New returns a client. It starts no goroutine and dials nothing; see
// Client for when it does. Config defaults apply to zero fields; an invalid
// config is reported by Config.Validate, which the caller runs first.
func New(cfg Config, deps Deps) *Client {
	cfg = cfg.withDefaults()
	logger := deps.Logger
	if logger == nil {
		logger = slog.Default()
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		cfg: cfg, place: deps.Placement, log: logger.With("component", "queue-pub"), creds: creds, obs: deps.Observer,
		ctx: ctx, cancel: cancel, closedCh: make(chan struct{}), all: map[*node]struct{}{},
	}
	empty := map[string]*node{}
	c.nodes.Store(&empty)
	return c
}

// NewBatchPublisher implements queue.Client.
func (c *Client) NewBatchPublisher(timeout time.Duration) queue.BatchPublisher {
	return &publisher{c: c, own: sendq.NewOwner(c.lanes.Add(1)), timeout: timeout}
}

func (c *Client) errClosed(topic queue.Topic) error {
	return fmt.Errorf("queue/pub: publish to %q: client %w", topic, queue.ErrClosed)
}

// publish routes a message and queues it, waiting for room as Client
// describes. m is the message, or nil to queue a new one made from h (see
// sendq.Queue.Push); otherwise h is &m.Head. p is the publisher of a new
// one, whose route cache it uses, or nil. publish returns the new
// message's future, or none and no error for a given m, or for a replica
// copy given up for lack of nodes (see Client).
func (c *Client) publish(ctx context.Context, p *publisher, h *sendq.Head, payload []byte, m *msg) (queue.Future, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var n *node
	for {
		if c.closed.Load() {
			return queue.Future{}, c.errClosed(h.Topic)
		}
		t := c.place.Current()
		var err error
		if m != nil && repOf(m) != nil {
			var q *msg
			n, q, err = c.routeCopy(t, c.nodesFor(t), m, nil)
			switch {
			case q == nil && err == nil:
				return queue.Future{}, nil
			case q != nil && q != m: // m was given up; its hint goes instead
				m, h, payload = q, &q.Head, q.Payload()
			}
		} else {
			n, err = c.route(t, c.nodesFor(t), p, h)
		}
		if err != nil {
			if errors.Is(err, queue.ErrNoNodes) && c.awaitNodes(ctx, t, h.Deadline) {
				continue
			}
			return queue.Future{}, err
		}
		f, room, queued, err := n.enqueue(h, payload, m)
		switch {
		case err != nil:
			return queue.Future{}, err
		case queued:
			return f, nil
		case room == nil:
			continue // the node left the table meanwhile: route again
		}
		if timer == nil {
			wait := min(c.cfg.PublishWait, time.Until(time.Unix(0, h.Deadline)))
			timer = time.NewTimer(wait)
		}
		select {
		case <-room:
		case <-ctx.Done():
			return queue.Future{}, fmt.Errorf("queue/pub: waiting for room to publish to %q on node %s: %w", h.Topic, n.name, ctx.Err())
		case <-c.closedCh:
			return queue.Future{}, c.errClosed(h.Topic)
		case <-timer.C:
			return queue.Future{}, fmt.Errorf("queue/pub: node %s holds %d bytes queued and in flight (limit %d); "+
				"gave up publishing to %q: %w", n.name, n.usedBytes(), c.cfg.MaxBytesPerNode, h.Topic,
				queue.ErrResourceExhausted)
		}
	}
}

// nodesFor returns the node set matching t, syncing it if t is newer.
func (c *Client) nodesFor(t *route.Table) map[string]*node {
	if c.synced.Load() != t.Version()+1 {
		c.sync(t)
	}
	return *c.nodes.Load()
}

// awaitNodes is what a message that found no data node in t does: while
// the table has been empty for less than RetryBudget (etcd dropped the
// nodes' leases for a moment, a single node restarts), it waits until the
// table changes and reports true to route again; past that, or past the
// message's deadline, ctx or Close, it reports false and the message fails
// with queue.ErrNoNodes. A registry blip so costs a short wait, not
// failed writes, and a cluster that really has no nodes fails fast.
func (c *Client) awaitNodes(ctx context.Context, t *route.Table, deadline int64) bool {
	c.awaiting.Add(1)
	defer c.awaiting.Add(-1)
	tk := time.NewTicker(c.cfg.TickInterval)
	defer tk.Stop()
	for {
		if c.place.Current() != t {
			return true
		}
		if now := time.Now().UnixNano(); !c.noNodesGrace(now) || now >= deadline {
			return false
		}
		select {
		case <-tk.C:
		case <-ctx.Done():
			return false
		case <-c.closedCh:
			return false
		}
	}
}

// noNodesGrace reports whether the table has been without data nodes for
// less than RetryBudget at now (see awaitNodes).
func (c *Client) noNodesGrace(now int64) bool {
	since := c.noNodesSince.Load()
	return since != 0 && now < since+int64(c.cfg.RetryBudget)
}

// sync swaps in the node set of t. Nodes that left (or changed address)
// are retired: marked removed at once, drained by the maintenance loop.
func (c *Client) sync(t *route.Table) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Version()+1 <= c.synced.Load() && c.synced.Load() != 0 {
		return // an older table than the one in force
	}
	old := *c.nodes.Load()
	next := make(map[string]*node, len(t.Members()))
	for _, rn := range t.Members() {
		if n := old[rn.Name]; n != nil && n.addr == rn.Addr {
			next[rn.Name] = n
			continue
		}
		n := newNode(c, rn)
		next[rn.Name] = n
		c.all[n] = struct{}{}
	}
	c.nodes.Store(&next)
	c.synced.Store(t.Version() + 1)
	switch {
	case len(next) > 0:
		c.noNodesSince.Store(0)
	case c.noNodesSince.Load() == 0:
		c.noNodesSince.Store(time.Now().UnixNano())
	}
	for name, n := range old {
		if next[name] != n {
			n.retire()
			c.log.Info("data node left the placement table; re-placing its work", "node", n.name, "addr", n.addr)
		}
	}
}

// now is a cheap clock for stamping deadlines: the last tick's time plus
// one tick, so it is never behind the real time while ticks keep up and a
// deadline is late by at most a tick, never early. Timers themselves
// compare against the real time.
func (c *Client) now() int64 {
	if t := c.clock.Load(); t != 0 {
		return t + int64(c.cfg.TickInterval)
	}
	return time.Now().UnixNano()
}

// maintain runs the timers: message deadlines, stalled streams, retry
// budgets, node set changes and the retry list, once per tick.
func (c *Client) maintain() {
	defer c.wg.Done()
	tk := time.NewTicker(c.cfg.TickInterval)
	defer tk.Stop()
	c.clock.Store(time.Now().UnixNano())
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tk.C:
		}
		now := time.Now()
		c.clock.Store(now.UnixNano())
		c.tick(now)
	}
}

func (c *Client) tick(now time.Time) {
	t := c.place.Current()
	nodes := c.nodesFor(t)
	c.mu.Lock()
	all := make([]*node, 0, len(c.all))
	for n := range c.all {
		all = append(all, n)
	}
	c.mu.Unlock()
	up := 0
	for _, n := range nodes {
		if !n.down.Load() {
			up++
		}
	}
	var moved []*msg
	for _, n := range all {
		moved = append(moved, n.tick(now, up > 0)...)
		if n.retired(now) {
			moved = append(moved, c.stopNode(n)...)
		}
	}
	c.retryMu.Lock()
	moved = append(moved, c.retry...)
	c.retry = c.retry[:0:0]
	c.retryMu.Unlock()
	waiting := 0
	if len(moved) > 0 {
		waiting = c.replace(t, nodes, moved, now)
	}
	c.waitingMsgs.Store(int64(waiting))
	if u := c.underReplicated.Load(); u != c.underLogged {
		c.log.Warn("messages written with fewer copies than their group's replicas: too few live nodes",
			"copies_missing", u-c.underLogged, "total", u)
		c.underLogged = u
	}
}

// stopNode ends a retired node's streams and returns what it still held.
func (c *Client) stopNode(n *node) []*msg {
	c.mu.Lock()
	delete(c.all, n)
	c.mu.Unlock()
	n.stop()
	return n.takeAll()
}

// replace re-places messages taken off a node (m.avoid names it) through
// the placement table. It never blocks: a target takes re-placed messages
// up to twice its budget (sendq.Queue.PushForced), and what it cannot
// take goes back on the retry list for the next tick, still counted by
// the budget of the node it came off, until its deadline. It returns how
// many it put back on the retry list to wait for a data node (see
// awaitNodes).
func (c *Client) replace(t *route.Table, nodes map[string]*node, msgs []*msg, now time.Time) int {
	cache := map[orderKey][]route.Node{}
	targets := map[*node][]*msg{}
	var waiting []*msg
	nowNano := now.UnixNano()
	for _, m := range msgs {
		switch {
		case m.IsDone():
			m.Unhold()
			continue
		case m.Expired(nowNano):
			m.Resolve(sendq.DeadlineErr(m, m.Avoid()), nil)
			m.Unhold()
			continue
		case m.Pinned():
			m.Resolve(fmt.Errorf("queue/pub: node %s did not answer the %q request: %w", m.Avoid(), m.Topic, queue.ErrNoNodes), nil)
			m.Unhold()
			continue
		}
		var n *node
		var err error
		if repOf(m) != nil {
			var q *msg
			n, q, err = c.routeCopy(t, nodes, m, cache)
			if q != nil && q != m { // m was given up; its hint goes instead
				m.Unhold()
				m = q
			}
		} else {
			n, err = c.failover(t, nodes, &m.Head, m.Avoid(), cache)
		}
		if err != nil {
			if errors.Is(err, queue.ErrNoNodes) && c.noNodesGrace(nowNano) {
				m.FailedOn(m.Avoid(), err) // reported if its deadline passes first
				waiting = append(waiting, m)
				continue
			}
			m.Resolve(err, nil)
			m.Unhold()
			continue
		}
		if n == nil {
			m.Unhold()
			continue // a replica copy given up: the others hold the message
		}
		if m.Topic == queue.TopicHint && m.Avoid() == "" {
			targets[n] = append(targets[n], m) // a new hint, not a move
			continue
		}
		if n.name != m.Avoid() {
			c.replaced.Add(1)
		}
		targets[n] = append(targets[n], m)
	}
	for n, ms := range targets {
		for _, m := range n.enqueueForced(ms) {
			// n is full of re-placed messages, or left the table
			// meanwhile. Back on the node m came off, if that one is up
			// again: its budget counts m already, and it would otherwise
			// wait there doing nothing. Else the next tick routes it again.
			if from := nodes[m.Avoid()]; from != nil && from != n && !from.down.Load() &&
				len(from.enqueueForced([]*msg{m})) == 0 {
				c.replaced.Add(-1) // not moved after all
				continue
			}
			c.retryLater(m)
		}
	}
	if len(waiting) > 0 {
		c.retryLater(waiting...) // no data node for now: the next tick tries again
	}
	return len(waiting)
}

func (c *Client) retryLater(ms ...*msg) {
	c.retryMu.Lock()
	c.retry = append(c.retry, ms...)
	c.retryMu.Unlock()
}

// Close stops intake (Publish and Broadcast return queue.ErrClosed), waits
// until ctx for every queued and in-flight message to be acked or to fail,
// then fails the rest with queue.ErrClosed, ends all streams and closes
// all connections. It returns an error counting the messages it failed.
func (c *Client) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.closedCh)
	})
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for c.outstanding() > 0 && ctx.Err() == nil {
		select {
		case <-poll.C:
		case <-ctx.Done():
		}
	}
	c.mu.Lock()
	c.stopped = true
	all := make([]*node, 0, len(c.all))
	for n := range c.all {
		all = append(all, n)
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	var left []*msg
	for _, n := range all {
		n.stop()
		left = append(left, n.takeAll()...)
	}
	c.retryMu.Lock()
	left = append(left, c.retry...)
	c.retry = nil
	c.retryMu.Unlock()
	failed := 0
	for _, m := range left {
		if m.Resolve(fmt.Errorf("queue/pub: client closed before a node acked the %q message for group %q: %w",
			m.Topic, m.Group, queue.ErrClosed), nil) {
			failed++
		}
		m.Unhold()
	}
	if failed > 0 {
		c.log.Warn("queue client closed with undelivered messages", "failed", failed)
		return fmt.Errorf("queue/pub: close: %d messages not acked before the drain deadline: %w", failed, ctx.Err())
	}
	return nil
}

func (c *Client) outstanding() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var k int64
	for n := range c.all {
		k += n.outstanding()
	}
	c.retryMu.Lock()
	k += int64(len(c.retry))
	c.retryMu.Unlock()
	return k
}
