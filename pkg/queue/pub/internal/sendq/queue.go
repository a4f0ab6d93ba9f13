package sendq

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/banyand-io/banyand/pkg/queue"
)

// Config sizes a Queue.
type Config struct {
	// Node names the node the queue sends to, in the errors it settles
	// messages with.
	Node string
	// MaxBytes is the byte budget: payload bytes queued and in flight.
	MaxBytes int64
	// MaxBatchMessages and MaxBatchBytes cap a batch, until SetCaps or a
	// too-large ack lowers them.
	MaxBatchMessages, MaxBatchBytes int
	// MaxInFlight is each window's size: batches taken and not yet acked.
	MaxInFlight int
	// Counters, shared by a client's queues, count what Stats reports.
	Counters *Counters
}

// Counters are the events a client's queues count together.
type Counters struct {
	// Held counts the times Take left a small batch queued to grow
	// while another batch was in flight on its window.
	Held atomic.Int64
	// Recycled counts messages taken back for new ones after their
	// batch was acked whole.
	Recycled atomic.Int64
}

// Queue is one node's send queue: lanes of batches per topic, the node's
// byte budget, and the windows of batches in flight on its streams.
//
// Backpressure: Push admits a message while the budget has room for it,
// or the budget is empty (one message always fits); otherwise it returns
// the channel that closes when bytes are released, and the caller waits
// on it as long as it is willing to. PushForced, for messages re-placed
// from another queue, admits up to twice the budget (or one into an
// empty one) and never blocks: it hands back what does not fit. A
// message taken off for re-placement (Drain, a Retry in Failed) stays
// counted by the budget of the queue it left until another queue takes it
// or it is let go (Msg.Unhold), so every byte of an unsettled message is
// counted by exactly one queue, and a node's queue holds at most twice
// its budget. Take never blocks: it reports Empty, Full or Held and the
// caller waits on Work or its own ack signal.
type Queue struct {
	cfg  Config
	work chan struct{} // wakes an idle send loop when a lane goes from empty to not

	// lanes hold the queued messages; publishers take only their lane's
	// lock (see lane).
	lanes [numLanes]lane
	// used is the budget: payload bytes queued plus in flight, plus the
	// lanes' unused credit. It changes by a chunk, a batch or a rare
	// message at a time (see reserve).
	used atomic.Int64
	// roomWanted tells releases that a publisher waits on room.
	roomWanted atomic.Bool
	// closed: the queue takes no new messages (its node left the table).
	closed atomic.Bool
	// Batch caps for new batches: the configured ones, lowered by SetCaps
	// and halved on every too-large ack. Written under mu.
	maxBytes, maxMsgs atomic.Int64
	// inflight mirrors the batches in flight (under mu) so readers take no lock.
	inflight atomic.Int64

	// mu guards the fields below and every window's. Nobody holds it
	// while doing I/O. Under it a lane's lock may be taken.
	mu      sync.Mutex
	rr      int // next lane to serve
	room    chan struct{}
	windows []*Window
}

// New returns an empty queue.
func New(cfg Config) *Queue {
	q := &Queue{cfg: cfg, work: make(chan struct{}, 1)}
	for i := range q.lanes {
		q.lanes[i].nextExpiry = math.MaxInt64
	}
	q.maxBytes.Store(int64(cfg.MaxBatchBytes))
	q.maxMsgs.Store(int64(cfg.MaxBatchMessages))
	return q
}

// Work receives a value when a send loop waiting for work (Empty or Held)
// should Take again.
func (q *Queue) Work() <-chan struct{} { return q.work }

// lane returns the lane for o's messages; lane 0 takes ownerless ones.
func (q *Queue) lane(o *Owner) *lane {
	if o == nil {
		return &q.lanes[0]
	}
	return &q.lanes[o.lane%numLanes]
}

// Push queues a message unless the budget is full (it returns the
// channel that closes when room frees up) or the queue is closed (it
// returns neither). The message is m, or if m is nil a new one from the
// queue's slabs, copied from h; the future returned is the new one's,
// taken under the lane's lock: once that is released the message may be
// sent, acked and recycled before its publisher looks at it. A given m
// is the caller's, with a future of its own.
func (q *Queue) Push(h *Head, payload []byte, m *Msg) (f queue.Future, room <-chan struct{}, queued bool) {
	l, size := q.lane(h.Owner), h.Size()
	for reclaimed := false; ; reclaimed = true {
		l.mu.Lock()
		if q.closed.Load() {
			l.mu.Unlock()
			return f, nil, false
		}
		if l.credit >= size || q.reserve(l, size) {
			l.credit -= size
			fresh := m == nil
			if fresh {
				// Field by field, leaving the zero ones alone: each pointer
				// store costs a write barrier while the GC marks.
				m = l.newMsg()
				m.Key, m.Deadline, m.Shard, m.Plen = h.Key, h.Deadline, h.Shard, h.Plen
				if h.X != nil {
					m.X = h.X
				}
			}
			out := q.push(l, m, payload, fresh)
			if fresh {
				f = m.future(out)
			}
			l.mu.Unlock()
			return f, nil, true
		}
		l.mu.Unlock()
		if !reclaimed {
			q.reclaim() // other lanes' unused credit may be the room we need
			continue
		}
		if room := q.waitRoom(size); room != nil {
			return f, room, false
		}
	}
}

// PushForced queues messages taken off a queue for re-placement while
// this queue's bytes stay within twice the budget (a message always fits
// into an empty one), so that re-placed messages get in ahead of new
// ones, which wait at the budget, without a burst of them growing the
// queue without bound. Each message queued moves its bytes from the
// budget of the queue it left (Msg.X.Held) to this one's. It never
// blocks, and returns the messages it did not queue, in order, still
// counted where they were: all of them if the queue is closed.
func (q *Queue) PushForced(ms []*Msg) (left []*Msg) {
	type moved struct {
		from  *Queue
		bytes int64
	}
	var out []moved
	l := &q.lanes[0]
	l.mu.Lock()
	if q.closed.Load() {
		l.mu.Unlock()
		return ms
	}
	for _, m := range ms {
		var from *Queue
		if m.X != nil {
			from = m.X.Held
		}
		// A message back to the queue that holds it is counted already.
		if from != q && !q.reserveForced(m.Size()) {
			left = append(left, m)
			continue
		}
		if from != nil {
			m.X.Held = nil
			if from != q {
				out = append(out, moved{from, m.Size()})
			}
		}
		q.push(l, m, m.Payload(), false)
	}
	l.mu.Unlock()
	// Not under l.mu: a release may take the other queue's mu, which is
	// taken before a lane's.
	for _, mv := range out {
		mv.from.release(mv.bytes)
	}
	return left
}

// reserveForced charges size bytes to the budget if they keep it within
// twice MaxBytes, or it is empty (see PushForced).
func (q *Queue) reserveForced(size int64) bool {
	limit := 2 * q.cfg.MaxBytes
	for {
		u := q.used.Load()
		if u != 0 && u+size > limit {
			return false
		}
		if q.used.CompareAndSwap(u, u+size) {
			return true
		}
	}
}

// push queues m in its topic's newest batch in l, or a new one. l.mu is
// held; m's bytes are already charged to the budget. fresh and the
// outcome returned are as for Batch.add.
func (q *Queue) push(l *lane, m *Msg, payload []byte, fresh bool) *outcome {
	ws := wireSize(len(payload))
	tq := l.queue(m.Topic)
	maxMsgs, maxBytes := int(q.maxMsgs.Load()), int(q.maxBytes.Load())
	var b *Batch
	if k := len(tq.batches); k > 0 && tq.batches[k-1].fits(ws, maxMsgs, maxBytes) {
		b = tq.batches[k-1]
	} else {
		b = newBatch(tq.topic)
		b.lane = l
		tq.batches = append(tq.batches, b)
	}
	out := b.add(m, payload, ws, fresh)
	l.nextExpiry = min(l.nextExpiry, m.Deadline)
	l.queued++
	if l.queued == 1 || b.reachedHold(ws, maxMsgs, maxBytes) {
		q.wake()
	}
	return out
}

func (q *Queue) wake() {
	select {
	case q.work <- struct{}{}:
	default:
	}
}

// reserve moves budget for a message of size bytes into l.credit, a chunk
// at a time when the budget has room for one. A message is admitted when
// it fits the budget or the budget is empty. l.mu is held.
func (q *Queue) reserve(l *lane, size int64) bool {
	limit := q.cfg.MaxBytes
	need := size - l.credit
	want := max(need, min(limit/64, 64<<10))
	for {
		u := q.used.Load()
		w := want
		switch {
		case u+w <= limit:
		case u+need <= limit || u == 0:
			w = need
		default:
			return false
		}
		if q.used.CompareAndSwap(u, u+w) {
			l.credit += w
			return true
		}
	}
}

// reclaim returns every lane's unused credit to the budget, so that a
// publisher waiting for room does not wait on bytes nobody uses.
func (q *Queue) reclaim() {
	for i := range q.lanes {
		l := &q.lanes[i]
		l.mu.Lock()
		c := l.credit
		l.credit = 0
		l.mu.Unlock()
		q.release(c)
	}
}

// waitRoom returns the channel that closes when bytes are released, or nil
// if a message of size bytes fits now.
func (q *Queue) waitRoom(size int64) <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.room == nil {
		q.room = make(chan struct{})
	}
	q.roomWanted.Store(true)
	// After the flag: a release that missed it is seen here.
	if u := q.used.Load(); u == 0 || u+size <= q.cfg.MaxBytes {
		return nil
	}
	return q.room
}

// release returns bytes to the budget and wakes publishers waiting for room.
func (q *Queue) release(b int64) {
	if b == 0 {
		return
	}
	q.used.Add(-b)
	if q.roomWanted.Load() {
		q.mu.Lock()
		q.wakeRoomLocked()
		q.mu.Unlock()
	}
}

// releaseLocked is release with q.mu held.
func (q *Queue) releaseLocked(b int64) {
	if b == 0 {
		return
	}
	q.used.Add(-b)
	q.wakeRoomLocked()
}

func (q *Queue) wakeRoomLocked() {
	q.roomWanted.Store(false)
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
}

// Close makes the queue take no new messages; what it holds stays until
// Drain and the acks of its windows.
func (q *Queue) Close() { q.closed.Store(true) }

// Closed reports whether Close was called.
func (q *Queue) Closed() bool { return q.closed.Load() }

// Used is the budget in use, for gauges and error messages.
func (q *Queue) Used() int64 { return q.used.Load() }

// InFlight is the number of batches in flight on all windows.
func (q *Queue) InFlight() int64 { return q.inflight.Load() }

// Queued counts the messages queued in all lanes.
func (q *Queue) Queued() int {
	k := 0
	for i := range q.lanes {
		l := &q.lanes[i]
		l.mu.Lock()
		k += l.queued
		l.mu.Unlock()
	}
	return k
}

// Outstanding counts the messages queued or in flight.
func (q *Queue) Outstanding() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := int64(q.Queued())
	for _, w := range q.windows {
		for _, b := range w.pending {
			k += int64(len(b.msgs))
		}
	}
	return k
}

// Drain takes every queued message off the queue for re-placement; each
// records the queue's node as the one to avoid, and stays counted by the
// queue's budget until it is queued elsewhere or let go (see
// PushForced). Settled messages are dropped. In-flight batches stay.
func (q *Queue) Drain() []*Msg {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*Msg
	var bytes int64
	for i := range q.lanes {
		l := &q.lanes[i]
		l.mu.Lock()
		for _, tq := range l.queues {
			for _, b := range tq.batches {
				b.detach()
				bytes += b.bytes
				for _, m := range b.msgs {
					if m.IsDone() {
						continue
					}
					m.FailedOn(q.cfg.Node, nil)
					m.hold(q)
					bytes -= m.Size()
					out = append(out, m)
				}
				putBatch(b)
			}
			clear(tq.batches)
			tq.batches = tq.batches[:0]
		}
		l.queued = 0
		l.nextExpiry = math.MaxInt64
		l.mu.Unlock()
	}
	q.releaseLocked(bytes)
	return out
}

// Expire fails the messages, queued or in flight, past their deadline at
// now. It walks a lane's queues only when the lane's earliest deadline
// has passed, which a healthy node never lets happen, and an in-flight
// batch only when its earliest has. Bytes in flight stay charged until
// the batch's ack.
func (q *Queue) Expire(now int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var freed int64
	for i := range q.lanes {
		l := &q.lanes[i]
		l.mu.Lock()
		if now < l.nextExpiry {
			l.mu.Unlock()
			continue
		}
		next := int64(math.MaxInt64)
		for _, tq := range l.queues {
			kept := tq.batches[:0]
			for _, b := range tq.batches {
				f, d := b.compact(now, q.cfg.Node)
				freed += f
				l.queued -= d
				if len(b.msgs) == 0 {
					putBatch(b)
					continue
				}
				next = min(next, b.minDeadline)
				kept = append(kept, b)
			}
			clear(tq.batches[len(kept):])
			tq.batches = kept
		}
		l.nextExpiry = next
		l.mu.Unlock()
	}
	q.releaseLocked(freed)
	for _, w := range q.windows {
		for _, b := range w.pending {
			if now >= b.minDeadline {
				b.expire(now, q.cfg.Node)
			}
		}
	}
}
