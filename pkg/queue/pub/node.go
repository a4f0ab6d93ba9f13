package pub

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub/internal/sendq"
	"github.com/banyand-io/banyand/pkg/route"
)

// node is one data node: its connection and streams, its health as the
// router sees it, and its send queue.
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

	// q holds its queued and in-flight writes and their byte budget; q
	// closed means the node left the table and takes no new messages. rq
	// does the same for requests (Broadcast: queries), sent on a stream of
	// their own so that a slow or large answer never holds a write back
	// (a window slot, the stall timer, a frame in the way of acks).
	q, rq *sendq.Queue

	// mu guards everything below. The node's stream loops and the
	// maintenance loop take it, briefly; nobody holds it while doing I/O.
	// Under it the queue's locks may be taken.
	mu           sync.Mutex
	streams      []*stream // StreamsPerNode for writes, then one for requests
	up           int       // write streams past their handshake
	downSince    time.Time // when the last stream went down; zero while one is up
	incompatible bool
	removedAt    time.Time
}

func newNode(c *Client, rn route.Node) *node {
	cfg := sendq.Config{
		Node: rn.Name, MaxBytes: c.cfg.MaxBytesPerNode, MaxInFlight: c.cfg.MaxInFlightBatches,
		MaxBatchMessages: c.cfg.MaxBatchMessages, MaxBatchBytes: c.cfg.MaxBatchBytes, Counters: &c.counters,
	}
	return &node{c: c, name: rn.Name, addr: rn.Addr, q: sendq.New(cfg), rq: sendq.New(cfg)}
}

// queues are the node's write and request queues.
func (n *node) queues() [2]*sendq.Queue { return [2]*sendq.Queue{n.q, n.rq} }

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
	for i := range c.cfg.StreamsPerNode + 1 {
		q := n.q
		if i == c.cfg.StreamsPerNode {
			q = n.rq // the last stream carries requests
		}
		s := newStream(n, i, q)
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

// enqueue queues a message on the node; see sendq.Queue.Push for what it
// returns. It fails once the client has stopped.
func (n *node) enqueue(h *sendq.Head, payload []byte, m *msg) (f queue.Future, room <-chan struct{}, queued bool, err error) {
	if !n.ensureStarted() {
		return f, nil, false, n.c.errClosed(h.Topic)
	}
	q := n.q
	if h.Pinned() {
		q = n.rq
	}
	f, room, queued = q.Push(h, payload, m)
	return f, room, queued, nil
}

// enqueueForced queues re-placed messages up to twice the node's budget
// (sendq.Queue.PushForced) and returns those it did not queue: what did
// not fit, or all of them if the node left the table meanwhile.
func (n *node) enqueueForced(ms []*msg) []*msg {
	if !n.ensureStarted() {
		return ms
	}
	return n.q.PushForced(ms)
}

// tick runs the node's timers (see Client.maintain) and returns the
// messages to re-place elsewhere.
func (n *node) tick(now time.Time, otherUp bool) []*msg {
	cfg := &n.c.cfg
	nowNano := now.UnixNano()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.q.Expire(nowNano)
	n.rq.Expire(nowNano)
	for _, s := range n.streams {
		stalledFn := s.q.Stalled
		if s.q == n.rq {
			stalledFn = s.q.StalledPastDeadline
		}
		if k, stalled := stalledFn(s.w, nowNano, cfg.StallTimeout); stalled && s.abort != nil {
			n.c.log.Warn("stream to data node stalled; reopening it", "node", n.name, "stream", s.idx,
				"in_flight_batches", k, "stall_timeout", cfg.StallTimeout)
			s.abort(fmt.Errorf("no ack for %s with %d batches in flight: %w", cfg.StallTimeout, k, errStalled))
			s.abort = nil
		}
	}
	if !n.down.Load() && !n.downSince.IsZero() && now.Sub(n.downSince) >= cfg.RetryBudget {
		n.down.Store(true)
		n.c.log.Warn("data node unreachable past the retry budget; routing around it",
			"node", n.name, "addr", n.addr, "since", n.downSince, "queued", n.q.Queued())
	}
	if (n.q.Closed() || (n.down.Load() && otherUp)) && n.q.Queued() > 0 {
		return n.q.Drain()
	}
	if n.rq.Closed() && n.rq.Queued() > 0 {
		return n.rq.Drain() // pinned: failed by replace, never moved
	}
	return nil
}

// streamUp records a stream past its handshake; abort ends its session.
// maxBatchBytes is the batch byte cap the node accepts; a new session
// starts over from the configured caps, lowered to it.
func (n *node) streamUp(s *stream, abort context.CancelCauseFunc, maxBatchBytes int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s.q.Open(s.w, maxBatchBytes, time.Now().UnixNano())
	s.abort = abort
	if s.sessions++; s.sessions > 1 {
		n.c.reconnects.Add(1)
	}
	if s.q == n.rq {
		return // the node's health is its write streams'
	}
	n.up++
	if !n.downSince.IsZero() {
		n.c.log.Info("data node reachable again", "node", n.name, "down_for", time.Since(n.downSince))
	}
	n.downSince = time.Time{}
	if !n.q.Closed() && !n.incompatible {
		n.down.Store(false)
	}
}

// streamEnded puts a finished session's in-flight messages back in the
// queues (they are resent on reconnect, or re-placed if the node stays
// down) and starts the retry budget clock once no stream is up.
func (n *node) streamEnded(s *stream, wasUp, incompatible bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s.abort = nil
	s.q.Requeue(s.w)
	if s.q == n.rq {
		if incompatible {
			n.incompatible = true
			n.down.Store(true)
		}
		return // the node's health is its write streams'
	}
	if wasUp {
		n.up--
	}
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
	n.q.Close()
	n.rq.Close()
	n.removedAt = time.Now()
	n.down.Store(true)
}

// retired reports a removed node whose in-flight batches were acked or
// had the retry budget to be: it can be stopped.
func (n *node) retired(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.q.Closed() && (n.q.InFlight()+n.rq.InFlight() == 0 || now.Sub(n.removedAt) >= n.c.cfg.RetryBudget)
}

// stop ends the node's streams, waits for their goroutines and closes its
// connection. Their in-flight messages end up in the queue (takeAll).
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

// takeAll closes the node's queue and returns everything it still
// holds. Only for a stopped node, whose streams requeued their batches.
func (n *node) takeAll() []*msg {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down.Store(true)
	var out []*msg
	for _, q := range n.queues() {
		q.Close()
		out = append(out, q.Drain()...)
	}
	return out
}

// usedBytes is the budget in use, for gauges and error messages.
func (n *node) usedBytes() int64 { return n.q.Used() + n.rq.Used() }

func (n *node) outstanding() int64 { return n.q.Outstanding() + n.rq.Outstanding() }

// inFlight counts the batches sent to the node and not yet acked.
func (n *node) inFlight() int64 { return n.q.InFlight() + n.rq.InFlight() }
