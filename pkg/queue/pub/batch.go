package pub

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// batch is one Batch frame: built in its node's topic queue, where
// publishers append to the newest batch while it has room, then in flight
// on a stream until acked. payloads is the frame's message list as is, so
// sending a batch copies nothing per message.
type batch struct {
	id          uint64
	topic       queue.Topic
	msgs        []*msg
	payloads    [][]byte // payloads[i] is msgs[i].payload
	size        int      // encoded frame size estimate, checked against the batch byte cap
	bytes       int64    // payload bytes, charged to the node's budget
	minDeadline int64    // of unresolved messages: when the sweep must look
	maxDeadline int64    // sent as the frame's deadline: the batch is moot after it
}

var batchPool = sync.Pool{New: func() any { return new(batch) }}

func newBatch(topic queue.Topic) *batch {
	b := batchPool.Get().(*batch)
	b.topic, b.size, b.minDeadline = topic, batchOverhead+len(topic), math.MaxInt64
	return b
}

func putBatch(b *batch) {
	clear(b.msgs)
	clear(b.payloads)
	*b = batch{msgs: b.msgs[:0], payloads: b.payloads[:0]}
	batchPool.Put(b)
}

// wireSize is a message's share of the encoded frame: tag, length, bytes.
func wireSize(payload []byte) int { return len(payload) + 1 + uvarintLen(len(payload)) }

func uvarintLen(x int) int {
	k := 1
	for x >= 0x80 {
		x >>= 7
		k++
	}
	return k
}

// fits reports whether a message of wire size ws may join b under the caps.
// An empty batch takes any message; take fails one that is over the cap alone.
func (b *batch) fits(ws, maxMsgs, maxBytes int) bool {
	return len(b.msgs) == 0 || (len(b.msgs) < maxMsgs && b.size+ws <= maxBytes)
}

func (b *batch) add(m *msg, ws int) {
	b.msgs = append(b.msgs, m)
	b.payloads = append(b.payloads, m.payload)
	b.size += ws
	b.bytes += m.size()
	b.minDeadline = min(b.minDeadline, m.deadline)
	b.maxDeadline = max(b.maxDeadline, m.deadline)
}

// expire fails the batch's messages past their deadline. Their bytes stay
// charged until the batch is acked or its stream ends.
func (b *batch) expire(now int64, node string) {
	next := int64(math.MaxInt64)
	for _, m := range b.msgs {
		switch {
		case m.isDone():
		case m.expired(now):
			m.resolve(deadlineErr(m, node), nil)
		default:
			next = min(next, m.deadline)
		}
	}
	b.minDeadline = next
}

// compact drops resolved messages from a queued batch, failing those past
// their deadline first, and returns the payload bytes it dropped.
func (b *batch) compact(now int64, node string) (freed int64, dropped int) {
	kept := 0
	b.size, b.bytes = batchOverhead+len(b.topic), 0
	b.minDeadline, b.maxDeadline = math.MaxInt64, 0
	for _, m := range b.msgs {
		if !m.isDone() && m.expired(now) {
			m.resolve(deadlineErr(m, node), nil)
		}
		if m.isDone() {
			freed += m.size()
			dropped++
			continue
		}
		b.msgs[kept], b.payloads[kept] = m, m.payload
		kept++
		b.size += wireSize(m.payload)
		b.bytes += m.size()
		b.minDeadline = min(b.minDeadline, m.deadline)
		b.maxDeadline = max(b.maxDeadline, m.deadline)
	}
	clear(b.msgs[kept:])
	clear(b.payloads[kept:])
	b.msgs, b.payloads = b.msgs[:kept], b.payloads[:kept]
	return freed, dropped
}

// topicQueue holds one topic's queued batches, oldest first. Only the
// newest takes appends; the send loop takes the oldest whole.
type topicQueue struct {
	topic   queue.Topic
	batches []*batch
}

func (q *topicQueue) popFront() *batch {
	b := q.batches[0]
	copy(q.batches, q.batches[1:]) // a handful of batches: cheaper than regrowing
	q.batches[len(q.batches)-1] = nil
	q.batches = q.batches[:len(q.batches)-1]
	return b
}

// newMsg hands out a message from one of the node's slabs: one allocation
// per slabSize messages, made under n.mu, which the caller holds anyway.
// Publishers use different slabs (by lane) so that messages written by
// different cores do not share cache lines.
func (n *node) newMsg(lane uint32) *msg {
	slab := &n.slabs[lane%uint32(len(n.slabs))]
	if len(*slab) == 0 {
		*slab = make([]msg, slabSize)
	}
	m := &(*slab)[0]
	*slab = (*slab)[1:]
	return m
}

// push queues m in its topic's newest batch, or a new one. n.mu is held.
func (n *node) push(m *msg) {
	ws := wireSize(m.payload)
	q := n.queue(m.topic)
	var b *batch
	if k := len(q.batches); k > 0 && q.batches[k-1].fits(ws, n.maxMsgs, n.maxBytes) {
		b = q.batches[k-1]
	} else {
		b = newBatch(q.topic)
		q.batches = append(q.batches, b)
	}
	b.add(m, ws)
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

// requeueFront puts messages back at the head of their queues, in new
// batches under the current caps, keeping their bytes: they were in flight
// on a stream that ended, or rejected as part of a too large batch.
// Resolved messages are dropped instead.
func (n *node) requeueFront(ms []*msg) {
	type front struct {
		q       *topicQueue
		batches []*batch
	}
	var fronts []front
	cur := -1
	for _, m := range ms {
		if m.isDone() {
			n.releaseLocked(m.size())
			continue
		}
		if cur < 0 || fronts[cur].q.topic != m.topic {
			cur = -1
			for i := range fronts {
				if fronts[i].q.topic == m.topic {
					cur = i
				}
			}
			if cur < 0 {
				fronts = append(fronts, front{q: n.queue(m.topic)})
				cur = len(fronts) - 1
			}
		}
		f := &fronts[cur]
		ws := wireSize(m.payload)
		if k := len(f.batches); k == 0 || !f.batches[k-1].fits(ws, n.maxMsgs, n.maxBytes) {
			f.batches = append(f.batches, newBatch(m.topic))
		}
		f.batches[len(f.batches)-1].add(m, ws)
		n.queued++
		n.nextExpiry = min(n.nextExpiry, m.deadline)
	}
	for _, f := range fronts {
		f.q.batches = append(f.batches, f.q.batches...)
	}
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
	var bytes int64
	for _, q := range n.queues {
		for _, b := range q.batches {
			for _, m := range b.msgs {
				m.failedOn(n.name, nil)
				out = append(out, m)
			}
			bytes += b.bytes
			putBatch(b)
		}
		clear(q.batches)
		q.batches = q.batches[:0]
	}
	n.queued = 0
	n.releaseLocked(bytes)
	n.nextExpiry = math.MaxInt64
	return out
}

// expireQueued fails queued messages past their deadline. It walks every
// queue, but only when the earliest queued deadline has passed, which a
// healthy node never lets happen.
func (n *node) expireQueued(now int64) {
	next := int64(math.MaxInt64)
	var freed int64
	for _, q := range n.queues {
		kept := q.batches[:0]
		for _, b := range q.batches {
			f, d := b.compact(now, n.name)
			freed += f
			n.queued -= d
			if len(b.msgs) == 0 {
				putBatch(b)
				continue
			}
			next = min(next, b.minDeadline)
			kept = append(kept, b)
		}
		clear(q.batches[len(kept):])
		q.batches = kept
	}
	n.nextExpiry = next
	if freed > 0 {
		n.releaseLocked(freed)
	}
}

type takeResult int

const (
	takeOK takeResult = iota
	takeEmpty
	takeFull
	takeAgain
)

// take moves the oldest queued batch of the next topic (round robin) into
// flight on s. Taking whatever is there, with no linger, makes batches
// grow with load by themselves.
func (n *node) take(s *stream) (*batch, takeResult) {
	cfg := &n.c.cfg
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(s.pending) >= cfg.MaxInFlightBatches {
		return nil, takeFull
	}
	if n.queued == 0 {
		return nil, takeEmpty
	}
	var q *topicQueue
	for i := range n.queues {
		if c := n.queues[(n.rr+i)%len(n.queues)]; len(c.batches) > 0 {
			q, n.rr = c, (n.rr+i+1)%len(n.queues)
			break
		}
	}
	b := q.popFront()
	n.queued -= len(b.msgs)
	if b.size > n.maxBytes || len(b.msgs) > n.maxMsgs {
		// Built before the caps came down (HelloAck, CODE_TOO_LARGE).
		if len(b.msgs) > 1 {
			ms := append([]*msg(nil), b.msgs...)
			putBatch(b)
			n.requeueFront(ms)
			return nil, takeAgain
		}
		if m := b.msgs[0]; !m.isDone() {
			m.resolve(fmt.Errorf("queue/pub: %q message of %d bytes exceeds node %s's batch limit of %d bytes: %w",
				m.topic, len(m.payload), n.name, n.maxBytes, queue.ErrInvalidMessage), nil)
		}
		n.releaseLocked(b.bytes)
		putBatch(b)
		return nil, takeAgain
	}
	b.id = s.nextID
	s.nextID++
	if len(s.pending) == 0 {
		s.lastProgress = time.Now().UnixNano()
	}
	s.pending = append(s.pending, b)
	n.inflight.Add(1)
	if n.queued > 0 && len(n.streams) > 1 {
		n.wake() // let another stream take the rest
	}
	return b, takeOK
}
