package sendq

import (
	"fmt"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// Window is one stream's batches in flight, oldest first, and the ids it
// gives them. Its fields are under its Queue's mu.
type Window struct {
	pending      []*Batch
	nextID       uint64
	lastProgress int64 // unix nano of the last ack, or of the take that filled an empty window
}

// NewWindow adds a window, for one stream of the queue's node.
func (q *Queue) NewWindow() *Window {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := &Window{nextID: 1}
	q.windows = append(q.windows, w)
	return w
}

// Open starts a session on w, whose batches have all been requeued: the
// batch caps start over from the configured ones, the byte cap lowered to
// maxBatchBytes (what the node accepts), and the stall clock from now.
func (q *Queue) Open(w *Window, maxBatchBytes int, now int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.maxBytes.Store(int64(maxBatchBytes))
	q.maxMsgs.Store(int64(q.cfg.MaxBatchMessages))
	w.lastProgress = now
}

// Stalled reports whether w has batches in flight and no ack came for
// more than d before now, and how many batches it has in flight.
func (q *Queue) Stalled(w *Window, now int64, d time.Duration) (inFlight int, stalled bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(w.pending), len(w.pending) > 0 && now-w.lastProgress > int64(d)
}

// StalledPastDeadline is Stalled for a window of requests, which may
// rightly go unanswered for as long as their deadlines allow (a slow
// query): it is stalled only once, on top of d without an ack, d has
// passed since the latest deadline of its batches in flight, by which a
// live subscriber has answered every one of them.
func (q *Queue) StalledPastDeadline(w *Window, now int64, d time.Duration) (inFlight int, stalled bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(w.pending) == 0 || now-w.lastProgress <= int64(d) {
		return len(w.pending), false
	}
	latest := int64(0)
	for _, b := range w.pending {
		latest = max(latest, b.maxDeadline)
	}
	return len(w.pending), now > latest+int64(d)
}

// TakeResult says what Take did.
type TakeResult int

// What Take did.
const (
	Took  TakeResult = iota
	Empty            // nothing queued: wait on Work
	Full             // the window is full: wait for an ack
	Held             // only batches too small to go while others are in flight: wait on Work or an ack
	Again            // Take changed the queue without taking: call it again
)

// holdDivisor: see holdMin.
const holdDivisor = 4

// holdMin is the size under which a batch waits while another is in
// flight on its window: a quarter of the caps (256 messages or 256 KB by
// default).
func holdMin(maxMsgs, maxBytes int) (msgs, bytes int) {
	return max(maxMsgs/holdDivisor, 2), maxBytes / holdDivisor
}

// reachedHold reports whether b, having just taken a message of wire size
// ws, became big enough to go while another batch is in flight: a send
// loop holding it (see Take) must look again.
func (b *Batch) reachedHold(ws, maxMsgs, maxBytes int) bool {
	minMsgs, minBytes := holdMin(maxMsgs, maxBytes)
	return len(b.msgs) == minMsgs || (b.size >= minBytes && b.size-ws < minBytes)
}

// Take moves the oldest queued batch of the next lane (round robin) into
// flight on w. There is no linger: a window with nothing in flight takes
// whatever is queued, so a lone write goes at once. But while a small
// batch (under a quarter of the caps, holdMin) is the latest in flight,
// the next small one waits (Held), taking the writes that arrive
// meanwhile, until an ack comes or it reaches the quarter (Push wakes
// the loop then). At moderate load every batch costs a frame, an ack, a
// log record and the wake-ups around them on both ends; sending each
// small batch the moment it could made a cluster write cost about twice
// its CPU at saturation. Under heavy load the batches in flight are big,
// nothing waits, and the window fills.
func (q *Queue) Take(w *Window) (*Batch, TakeResult) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(w.pending) >= q.cfg.MaxInFlight {
		return nil, Full
	}
	maxBytes, maxMsgs := int(q.maxBytes.Load()), int(q.maxMsgs.Load())
	minMsgs, minBytes := 0, 0
	if k := len(w.pending); k > 0 {
		if hm, hb := holdMin(maxMsgs, maxBytes); w.pending[k-1].small(hm, hb) {
			minMsgs, minBytes = hm, hb
		}
	}
	var b *Batch
	held := false
	for i := range numLanes {
		var h bool
		b, h = q.takeLane(&q.lanes[(q.rr+i)%numLanes], minMsgs, minBytes)
		held = held || h
		if b != nil {
			q.rr = (q.rr + i + 1) % numLanes
			break
		}
	}
	if b == nil {
		if held {
			q.cfg.Counters.Held.Add(1)
			return nil, Held
		}
		return nil, Empty
	}
	if b.size > maxBytes || len(b.msgs) > maxMsgs {
		// Built before the caps came down (Open, a too-large ack).
		if len(b.msgs) > 1 {
			b.detach()
			ms := append([]*Msg(nil), b.msgs...)
			putBatch(b)
			q.requeueFront(ms)
			return nil, Again
		}
		if m := b.msgs[0]; !m.IsDone() {
			m.Resolve(fmt.Errorf("queue/pub: %q message of %d bytes exceeds node %s's batch limit of %d bytes: %w",
				m.Topic, m.Plen, q.cfg.Node, maxBytes, queue.ErrInvalidMessage), nil)
		}
		q.releaseLocked(b.bytes)
		putBatch(b)
		return nil, Again
	}
	q.foldLanes(b, maxMsgs, maxBytes)
	b.id = w.nextID
	w.nextID++
	b.sentAt = time.Now().UnixNano()
	if len(w.pending) == 0 {
		w.lastProgress = b.sentAt
	}
	w.pending = append(w.pending, b)
	q.inflight.Add(1)
	if len(q.windows) > 1 {
		q.wake() // let another window take the rest, if any
	}
	return b, Took
}

// takeLane pops the oldest batch of l's next topic (round robin) that has
// at least minMsgs messages or minBytes of frame, or nil; held reports a
// batch left queued for being smaller. A lane left empty gives its credit
// back. q.mu is held.
func (q *Queue) takeLane(l *lane, minMsgs, minBytes int) (b *Batch, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queued == 0 {
		return nil, false
	}
	var tq *topicQueue
	for i := range l.queues {
		j := (l.rr + i) % len(l.queues)
		c := l.queues[j]
		if len(c.batches) == 0 {
			continue
		}
		if c.batches[0].small(minMsgs, minBytes) {
			held = true
			continue
		}
		tq, l.rr = c, (j+1)%len(l.queues)
		break
	}
	if tq == nil {
		return nil, held
	}
	b = tq.popFront()
	q.taken(l, len(b.msgs))
	return b, held
}

// taken accounts for k messages taken out of l in a batch. l.mu and q.mu
// are held.
func (q *Queue) taken(l *lane, k int) {
	l.queued -= k
	if l.queued == 0 && l.credit > 0 {
		q.releaseLocked(l.credit)
		l.credit = 0
	}
}

// foldLanes adds to b, just taken from one lane, the oldest batch of b's
// topic in each other lane, while the caps allow: the node's writes go
// in one frame, not one frame per lane. Without it, at moderate load
// every lane's batch is small, a small batch goes only once the one
// before it is acked (see Take), and with several publishers (one lane
// each) each lane got its turn only every few round trips, which was
// most of a cluster write's median latency. Under heavy load the batches
// are full and nothing fits. q.mu is held; each lane's lock is taken
// alone, as everywhere.
func (q *Queue) foldLanes(b *Batch, maxMsgs, maxBytes int) {
	if b.lane == nil {
		return // not built in a lane (requeued): leave it as it is
	}
	for i := range q.lanes {
		l := &q.lanes[i]
		if l == b.lane || len(b.msgs) >= maxMsgs {
			continue
		}
		if o := q.takeFitting(l, b.topic, maxMsgs-len(b.msgs), maxBytes-b.size); o != nil {
			b.absorb(o)
		}
	}
}

// takeFitting pops the oldest batch of topic t in l if it has at most
// msgs messages and its messages at most bytes of frame, else nil.
func (q *Queue) takeFitting(l *lane, t queue.Topic, msgs, bytes int) *Batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queued == 0 {
		return nil
	}
	for _, tq := range l.queues {
		if tq.topic != t || len(tq.batches) == 0 {
			continue
		}
		o := tq.batches[0]
		if len(o.msgs) > msgs || o.size-(FrameOverhead+len(t)) > bytes {
			return nil
		}
		tq.popFront()
		q.taken(l, len(o.msgs))
		return o
	}
	return nil
}

// requeueFront puts messages back at the head of lane 0's queues, in new
// batches under the current caps, keeping their bytes: they were in flight
// on a window that ended, or rejected as part of a too large batch.
// Resolved messages are dropped instead. q.mu is held.
func (q *Queue) requeueFront(ms []*Msg) {
	type front struct {
		tq      *topicQueue
		batches []*Batch
	}
	var fronts []front
	cur := -1
	maxMsgs, maxBytes := int(q.maxMsgs.Load()), int(q.maxBytes.Load())
	l := &q.lanes[0]
	l.mu.Lock()
	for _, m := range ms {
		if m.IsDone() {
			q.releaseLocked(m.Size())
			continue
		}
		if cur < 0 || fronts[cur].tq.topic != m.Topic {
			cur = -1
			for i := range fronts {
				if fronts[i].tq.topic == m.Topic {
					cur = i
				}
			}
			if cur < 0 {
				fronts = append(fronts, front{tq: l.queue(m.Topic)})
				cur = len(fronts) - 1
			}
		}
		f := &fronts[cur]
		ws := wireSize(int(m.Plen))
		if k := len(f.batches); k == 0 || !f.batches[k-1].fits(ws, maxMsgs, maxBytes) {
			f.batches = append(f.batches, newBatch(m.Topic))
		}
		f.batches[len(f.batches)-1].add(m, m.Payload(), ws, false)
		l.queued++
		l.nextExpiry = min(l.nextExpiry, m.Deadline)
	}
	for _, f := range fronts {
		f.tq.batches = append(f.batches, f.tq.batches...)
	}
	queued := l.queued
	l.mu.Unlock()
	if queued > 0 {
		q.wake()
	}
}

// Requeue puts the batches in flight on w back at the front of the queue,
// to be resent (its stream ended before their acks); their messages keep
// their bytes, and resolved ones are dropped.
func (q *Queue) Requeue(w *Window) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := len(w.pending) - 1; i >= 0; i-- { // newest first: requeueFront reverses
		b := w.pending[i]
		b.detach()
		q.requeueFront(b.msgs)
		putBatch(b)
		q.inflight.Add(-1)
	}
	clear(w.pending)
	w.pending = w.pending[:0]
}
