package pub

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// node is one data node: its queues, its byte budget, its connection and
// streams, and its health as the router sees it.
type node struct {
	c    *Client
	name string
	addr string

	ctx      context.Context // set by start; ends the node's streams
	cancel   context.CancelFunc
	wg       sync.WaitGroup // stream goroutines
	conn     atomic.Pointer[grpc.ClientConn]
	started  atomic.Bool
	stopOnce sync.Once

	// down routes new messages around the node: it has been unreachable
	// for the retry budget, refused our protocol version, or left the table.
	down atomic.Bool
	// inflight mirrors the batches in flight (under mu) so readers take no lock.
	inflight atomic.Int64

	// work wakes an idle send loop when the queues go from empty to not.
	work chan struct{}

	// mu guards everything below. Publishers, the node's send and receive
	// loops and the maintenance loop all take it, briefly; nobody holds it
	// while doing I/O or while taking another lock.
	mu           sync.Mutex
	queues       []*topicQueue // few topics: a slice beats a map
	rr           int           // next queue to serve, for fairness between topics
	queued       int
	used         int64 // payload bytes queued plus in flight: the budget
	nextExpiry   int64 // no queued message has an earlier deadline
	room         chan struct{}
	streams      []*stream
	up           int       // streams past their handshake
	downSince    time.Time // when the last stream went down; zero while one is up
	incompatible bool
	removed      bool
	removedAt    time.Time
}

type topicQueue struct {
	topic queue.Topic
	msgs  []*msg
}

func newNode(c *Client, rn route.Node) *node {
	return &node{c: c, name: rn.Name, addr: rn.Addr, work: make(chan struct{}, 1), nextExpiry: math.MaxInt64}
}

// ensureStarted dials the node and starts its streams on first use. It
// reports false once the client has stopped.
func (n *node) ensureStarted() bool {
	if n.started.Load() {
		return true
	}
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	if n.started.Load() {
		return true
	}
	c.startOnce.Do(func() {
		c.wg.Add(1)
		go c.maintain()
	})
	n.ctx, n.cancel = context.WithCancel(c.ctx)
	conn, err := grpc.NewClient(n.addr, c.dialOptions()...)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.started.Store(true)
	if err != nil {
		// An address gRPC cannot parse will not get better until the node
		// re-registers: route around it at once.
		c.log.Error("cannot dial data node", "node", n.name, "addr", n.addr, "err", err)
		n.incompatible = true
		n.down.Store(true)
		return true
	}
	n.conn.Store(conn)
	for i := range c.cfg.StreamsPerNode {
		s := newStream(n, i)
		n.streams = append(n.streams, s)
		n.wg.Add(1)
		go s.run(n.ctx)
	}
	return true
}

// resetConn replaces a connection that stopped answering (a dead peer can
// leave TCP open for minutes); streams on the old one fail and reopen.
func (n *node) resetConn(old *grpc.ClientConn) {
	conn, err := grpc.NewClient(n.addr, n.c.dialOptions()...)
	if err != nil {
		return
	}
	if n.conn.CompareAndSwap(old, conn) {
		_ = old.Close()
		return
	}
	_ = conn.Close()
}

// enqueue queues m unless the node's budget is full (it returns the channel
// that closes when room frees up) or the node left the table (it returns
// neither: route again).
func (n *node) enqueue(m *msg) (queued bool, room <-chan struct{}, err error) {
	if !n.ensureStarted() {
		return false, nil, n.c.errClosed(m.topic)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.removed:
		return false, nil, nil
	case n.used > 0 && n.used+m.size() > n.c.cfg.MaxBytesPerNode:
		if n.room == nil {
			n.room = make(chan struct{})
		}
		return false, n.room, nil
	}
	n.push(m)
	return true, nil, nil
}

// enqueueForced queues re-placed messages regardless of the budget and
// returns them all if the node left the table meanwhile.
func (n *node) enqueueForced(ms []*msg) []*msg {
	if !n.ensureStarted() {
		return ms
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.removed {
		return ms
	}
	for _, m := range ms {
		n.push(m)
	}
	return nil
}

func (n *node) push(m *msg) {
	q := n.queue(m.topic)
	q.msgs = append(q.msgs, m)
	n.used += m.size()
	n.nextExpiry = min(n.nextExpiry, m.deadline)
	n.queued++
	if n.queued == 1 {
		n.wake()
	}
}

func (n *node) wake() {
	select {
	case n.work <- struct{}{}:
	default:
	}
}

func (n *node) queue(t queue.Topic) *topicQueue {
	for _, q := range n.queues {
		if q.topic == t {
			return q
		}
	}
	q := &topicQueue{topic: t}
	n.queues = append(n.queues, q)
	return q
}

// requeueFront puts messages back at the head of their queues, keeping
// their bytes: they were in flight on a stream that ended, or rejected
// as part of a too large batch. Resolved messages are dropped instead.
func (n *node) requeueFront(ms []*msg) {
	var q *topicQueue
	var front []*msg
	flush := func() {
		if len(front) > 0 {
			q.msgs = append(front, q.msgs...)
			front = nil
		}
	}
	for _, m := range ms {
		if m.isDone() {
			n.releaseLocked(m.size())
			continue
		}
		if q == nil || q.topic != m.topic {
			flush()
			q = n.queue(m.topic)
		}
		front = append(front, m)
		n.queued++
		n.nextExpiry = min(n.nextExpiry, m.deadline)
	}
	flush()
	if n.queued > 0 {
		n.wake()
	}
}

func (n *node) releaseLocked(b int64) {
	n.used -= b
	if n.room != nil {
		close(n.room)
		n.room = nil
	}
}

// drainLocked takes every queued message off the node for re-placement.
func (n *node) drainLocked() []*msg {
	out := make([]*msg, 0, n.queued)
	for _, q := range n.queues {
		for i, m := range q.msgs {
			m.failedOn(n.name, nil)
			out = append(out, m)
			q.msgs[i] = nil
		}
		q.msgs = q.msgs[:0]
	}
	n.queued = 0
	var b int64
	for _, m := range out {
		b += m.size()
	}
	n.releaseLocked(b)
	n.nextExpiry = math.MaxInt64
	return out
}

// tick runs the node's timers (see Client.maintain) and returns the
// messages to re-place elsewhere.
func (n *node) tick(now time.Time, otherUp bool) []*msg {
	cfg := &n.c.cfg
	nowNano := now.UnixNano()
	n.mu.Lock()
	defer n.mu.Unlock()
	if nowNano >= n.nextExpiry {
		n.expireQueued(nowNano)
	}
	for _, s := range n.streams {
		for _, b := range s.pending {
			if nowNano >= b.minDeadline {
				b.expire(nowNano, n.name)
			}
		}
		if len(s.pending) > 0 && s.abort != nil && nowNano-s.lastProgress > int64(cfg.StallTimeout) {
			n.c.log.Warn("stream to data node stalled; reopening it", "node", n.name, "stream", s.idx,
				"in_flight_batches", len(s.pending), "stall_timeout", cfg.StallTimeout)
			s.abort(fmt.Errorf("no ack for %s with %d batches in flight: %w", cfg.StallTimeout, len(s.pending), errStalled))
			s.abort = nil
		}
	}
	if !n.down.Load() && !n.downSince.IsZero() && now.Sub(n.downSince) >= cfg.RetryBudget {
		n.down.Store(true)
		n.c.log.Warn("data node unreachable past the retry budget; routing around it",
			"node", n.name, "addr", n.addr, "since", n.downSince, "queued", n.queued)
	}
	if n.queued > 0 && (n.removed || (n.down.Load() && otherUp)) {
		return n.drainLocked()
	}
	return nil
}

// expireQueued fails queued messages past their deadline. It walks every
// queue, but only when the earliest queued deadline has passed, which a
// healthy node never lets happen.
func (n *node) expireQueued(now int64) {
	next := int64(math.MaxInt64)
	var freed int64
	for _, q := range n.queues {
		kept := q.msgs[:0]
		for _, m := range q.msgs {
			switch {
			case m.isDone():
			case m.expired(now):
				m.resolve(deadlineErr(m, n.name), nil)
			default:
				next = min(next, m.deadline)
				kept = append(kept, m)
				continue
			}
			freed += m.size()
			n.queued--
		}
		clear(q.msgs[len(kept):])
		q.msgs = kept
	}
	n.nextExpiry = next
	if freed > 0 {
		n.releaseLocked(freed)
	}
}

// streamUp records a stream past its handshake; abort ends its session.
func (n *node) streamUp(s *stream, abort context.CancelCauseFunc) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.up++
	s.abort = abort
	s.lastProgress = time.Now().UnixNano()
	if s.sessions++; s.sessions > 1 {
		n.c.reconnects.Add(1)
	}
	if !n.downSince.IsZero() {
		n.c.log.Info("data node reachable again", "node", n.name, "down_for", time.Since(n.downSince))
	}
	n.downSince = time.Time{}
	if !n.removed && !n.incompatible {
		n.down.Store(false)
	}
}

// streamEnded puts a finished session's in-flight messages back in the
// queues (they are resent on reconnect, or re-placed if the node stays
// down) and starts the retry budget clock once no stream is up.
func (n *node) streamEnded(s *stream, wasUp, incompatible bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if wasUp {
		n.up--
	}
	s.abort = nil
	for i := len(s.pending) - 1; i >= 0; i-- { // newest first: requeueFront reverses
		b := s.pending[i]
		n.requeueFront(b.msgs)
		putBatch(b)
		n.inflight.Add(-1)
	}
	clear(s.pending)
	s.pending = s.pending[:0]
	if n.up == 0 && n.downSince.IsZero() {
		n.downSince = time.Now()
	}
	if incompatible {
		n.incompatible = true
		n.down.Store(true)
	}
}

// retire marks a node that left the placement table.
func (n *node) retire() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.removed, n.removedAt = true, time.Now()
	n.down.Store(true)
}

// retired reports a removed node whose in-flight batches were acked or
// had the retry budget to be: it can be stopped.
func (n *node) retired(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.removed && (n.inflight.Load() == 0 || now.Sub(n.removedAt) >= n.c.cfg.RetryBudget)
}

// stop ends the node's streams, waits for their goroutines and closes its
// connection. Their in-flight messages end up in the queues (takeAll).
func (n *node) stop() {
	n.stopOnce.Do(func() {
		if !n.started.Load() {
			return
		}
		n.cancel()
		n.wg.Wait()
		if conn := n.conn.Load(); conn != nil {
			_ = conn.Close()
		}
	})
}

// takeAll marks the node removed and returns everything it still holds.
// Only for a stopped node.
func (n *node) takeAll() []*msg {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.removed = true
	n.down.Store(true)
	return n.drainLocked()
}

// usedBytes is the budget in use, for gauges and error messages.
func (n *node) usedBytes() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.used
}

func (n *node) outstanding() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := int64(n.queued)
	for _, s := range n.streams {
		for _, b := range s.pending {
			k += int64(len(b.msgs))
		}
	}
	return k
}
