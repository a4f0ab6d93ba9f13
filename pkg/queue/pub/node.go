package pub

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

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

	// work wakes an idle send loop when a lane goes from empty to not.
	work chan struct{}

	// lanes hold the queued messages; publishers take only their lane's
	// lock (see lane).
	lanes [numLanes]lane
	// used is the budget: payload bytes queued plus in flight, plus the
	// lanes' unused credit. It changes by a chunk, a batch or a rare
	// message at a time (see reserve).
	used atomic.Int64
	// roomWanted tells releases that a publisher waits on room.
	roomWanted atomic.Bool
	// removed: the node left the table; it takes no new messages.
	removed atomic.Bool
	// Batch caps for new batches: the configured ones, lowered by the
	// node's HelloAck and halved on every CODE_TOO_LARGE. Written under mu.
	maxBytes, maxMsgs atomic.Int64

	// mu guards everything below. The node's send and receive loops, the
	// maintenance loop and publishers waiting for room take it, briefly;
	// nobody holds it while doing I/O. Under it a lane's lock may be taken.
	mu           sync.Mutex
	rr           int // next lane to serve
	room         chan struct{}
	streams      []*stream
	up           int       // streams past their handshake
	downSince    time.Time // when the last stream went down; zero while one is up
	incompatible bool
	removedAt    time.Time
}

func newNode(c *Client, rn route.Node) *node {
	n := &node{c: c, name: rn.Name, addr: rn.Addr, work: make(chan struct{}, 1)}
	for i := range n.lanes {
		n.lanes[i].nextExpiry = math.MaxInt64
	}
	n.maxBytes.Store(int64(c.cfg.MaxBatchBytes))
	n.maxMsgs.Store(int64(c.cfg.MaxBatchMessages))
	return n
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

// enqueue queues a message unless the node's budget is full (it returns
// the channel that closes when room frees up) or the node left the table
// (it returns neither: route again). The message is m, or if m is nil a
// new one from the node's lane, copied from h; enqueue returns it and, if
// it became one of its batch's own, the batch's outcome for its future.
// Both are taken under the lane's lock: once that is released the message
// may be sent, acked and recycled before its publisher looks at it.
func (n *node) enqueue(h *msgHead, payload []byte, m *msg) (queued *msg, out *outcome, room <-chan struct{}, err error) {
	if !n.ensureStarted() {
		return nil, nil, nil, n.c.errClosed(h.topic)
	}
	l, size := n.lane(h.pub), h.size()
	for reclaimed := false; ; reclaimed = true {
		l.mu.Lock()
		if n.removed.Load() {
			l.mu.Unlock()
			return nil, nil, nil, nil
		}
		if l.credit >= size || n.reserve(l, size) {
			l.credit -= size
			fresh := m == nil
			if fresh {
				// Field by field, leaving the zero ones alone: each pointer
				// store costs a write barrier while the GC marks.
				m = l.newMsg()
				m.msgKey, m.deadline, m.shard, m.plen = h.msgKey, h.deadline, h.shard, h.plen
				if h.x != nil {
					m.x = h.x
				}
			}
			out = n.push(l, m, payload, fresh)
			l.mu.Unlock()
			return m, out, nil, nil
		}
		l.mu.Unlock()
		if !reclaimed {
			n.reclaim() // other lanes' unused credit may be the room we need
			continue
		}
		if room := n.waitRoom(size); room != nil {
			return nil, nil, room, nil
		}
	}
}

// enqueueForced queues re-placed messages regardless of the budget and
// returns them all if the node left the table meanwhile.
func (n *node) enqueueForced(ms []*msg) []*msg {
	if !n.ensureStarted() {
		return ms
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.removed.Load() {
		return ms
	}
	l := &n.lanes[0]
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range ms {
		n.used.Add(m.size())
		n.push(l, m, m.payload(), false)
	}
	return nil
}

// tick runs the node's timers (see Client.maintain) and returns the
// messages to re-place elsewhere.
func (n *node) tick(now time.Time, otherUp bool) []*msg {
	cfg := &n.c.cfg
	nowNano := now.UnixNano()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.expireQueued(nowNano)
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
			"node", n.name, "addr", n.addr, "since", n.downSince, "queued", n.queuedLocked())
	}
	if (n.removed.Load() || (n.down.Load() && otherUp)) && n.queuedLocked() > 0 {
		return n.drainLocked()
	}
	return nil
}

// streamUp records a stream past its handshake; abort ends its session.
// maxBatchBytes is the batch byte cap the node accepts; a new session
// starts over from the configured caps, lowered to it.
func (n *node) streamUp(s *stream, abort context.CancelCauseFunc, maxBatchBytes int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.maxBytes.Store(int64(maxBatchBytes))
	n.maxMsgs.Store(int64(n.c.cfg.MaxBatchMessages))
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
	if !n.removed.Load() && !n.incompatible {
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
		b.detach()
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
	n.removed.Store(true)
	n.removedAt = time.Now()
	n.down.Store(true)
}

// retired reports a removed node whose in-flight batches were acked or
// had the retry budget to be: it can be stopped.
func (n *node) retired(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.removed.Load() && (n.inflight.Load() == 0 || now.Sub(n.removedAt) >= n.c.cfg.RetryBudget)
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
	n.removed.Store(true)
	n.down.Store(true)
	return n.drainLocked()
}

// usedBytes is the budget in use, for gauges and error messages.
func (n *node) usedBytes() int64 { return n.used.Load() }

func (n *node) outstanding() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := int64(n.queuedLocked())
	for _, s := range n.streams {
		for _, b := range s.pending {
			k += int64(len(b.msgs))
		}
	}
	return k
}
