package pub

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
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
	payloads    [][]byte // payloads[i] is msgs[i]'s payload (see detach)
	size        int      // encoded frame size estimate, checked against the batch byte cap
	bytes       int64    // payload bytes, charged to the node's budget
	minDeadline int64    // of unresolved messages: when the sweep must look
	maxDeadline int64    // sent as the frame's deadline: the batch is moot after it
	sentAt      int64    // unix nano it was taken into flight, for the ack latency

	// out settles the batch's own messages at once on a clean, on-time
	// ack (see outcome). A message is the batch's own when it was queued
	// in it fresh from Publish (its future gets out then, before anyone
	// holds it, and never changes). dirty says out may not be used:
	// the batch holds a message not its own (re-placed, requeued, a
	// replica copy or broadcast request), a message of it was settled or
	// dropped on its own, or it has more publishers than pubs holds.
	out   *outcome
	lane  *lane // the lane it was built in, which takes its messages back (see lane.recycle)
	dirty bool
	npub  int
	pubs  [4]*publisher // the own messages' publishers, and how many each has
	count [4]int64
	// merged are the clean batches of other lanes whose messages joined
	// this one's frame (see absorb): emptied, they keep their outcome
	// and publisher counts for ack to settle.
	merged []*batch
}

var batchPool = sync.Pool{New: func() any { return new(batch) }}

func newBatch(topic queue.Topic) *batch {
	b := batchPool.Get().(*batch)
	b.topic, b.size, b.minDeadline = topic, batchOverhead+len(topic), math.MaxInt64
	b.out = new(outcome)
	return b
}

func putBatch(b *batch) {
	clear(b.msgs)
	recycle(b)
}

// putAckedBatch is putBatch for a batch settled by ack. Its message list
// is usually an empty one from lane.recycle; if the lane had no room for
// the messages, it leaves their pointers for the next user to overwrite:
// clearing a thousand pointers to messages costs a write barrier each
// while the GC marks, and
// they keep nothing but the messages' own small structs alive (a batch's
// own messages never carry a payload or error of their own), for as long
// as the pool keeps the batch.
func putAckedBatch(b *batch) { recycle(b) }

func recycle(b *batch) {
	clear(b.payloads) // payloads are big: never kept
	clear(b.merged)   // put back by ack, or left to the GC with their outcomes unset
	*b = batch{msgs: b.msgs[:0], payloads: b.payloads[:0], merged: b.merged[:0]}
	batchPool.Put(b)
}

// absorb moves the messages of o, a batch of another lane for the same
// topic, to the end of b, so both go in one frame (see take). The
// messages o owned keep o's outcome in their futures: while b and o are
// both clean b keeps o, emptied, and acks it with itself; otherwise b is
// dirty, its messages settle one by one and o's outcome is never set,
// as for any batch whose messages leave it.
func (b *batch) absorb(o *batch) {
	b.msgs = append(b.msgs, o.msgs...)
	b.payloads = append(b.payloads, o.payloads...)
	b.size += o.size - (batchOverhead + len(o.topic))
	b.bytes += o.bytes
	b.minDeadline = min(b.minDeadline, o.minDeadline)
	b.maxDeadline = max(b.maxDeadline, o.maxDeadline)
	if b.dirty || o.dirty {
		b.dirty = true
		putBatch(o)
		return
	}
	clear(o.msgs)
	clear(o.payloads)
	o.msgs, o.payloads = o.msgs[:0], o.payloads[:0]
	b.merged = append(b.merged, o)
}

// wireSize is a message's share of the encoded frame: tag, length, bytes.
func wireSize(plen int) int { return plen + 1 + uvarintLen(plen) }

func uvarintLen(x int) int {
	k := 1
	for x >= 0x80 {
		x >>= 7
		k++
	}
	return k
}

// small reports whether b is under both minMsgs messages and minBytes of
// frame (see take).
func (b *batch) small(minMsgs, minBytes int) bool {
	return len(b.msgs) < minMsgs && b.size < minBytes
}

// fits reports whether a message of wire size ws may join b under the caps.
// An empty batch takes any message; take fails one that is over the cap alone.
func (b *batch) fits(ws, maxMsgs, maxBytes int) bool {
	return len(b.msgs) == 0 || (len(b.msgs) < maxMsgs && b.size+ws <= maxBytes)
}

// add appends m. fresh says m comes straight from Publish and nobody
// holds its future yet: it may become one of b's own, and then add
// returns b's outcome for its future.
func (b *batch) add(m *msg, payload []byte, ws int, fresh bool) (out *outcome) {
	if fresh && m.pub != nil {
		out = b.own(m)
	} else {
		b.dirty = true
	}
	b.msgs = append(b.msgs, m)
	b.payloads = append(b.payloads, payload)
	b.size += ws
	b.bytes += m.size()
	b.minDeadline = min(b.minDeadline, m.deadline)
	b.maxDeadline = max(b.maxDeadline, m.deadline)
	return out
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
			b.dirty = true
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
	for i, m := range b.msgs {
		if !m.isDone() && m.expired(now) {
			m.resolve(deadlineErr(m, node), nil)
		}
		if m.isDone() {
			freed += m.size()
			dropped++
			b.dirty = true
			continue
		}
		b.msgs[kept], b.payloads[kept] = m, b.payloads[i]
		kept++
		b.size += wireSize(int(m.plen))
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

// numLanes is how many lanes a node's queue has.
const numLanes = 4

// lane is one share of a node's queue. A publisher appends to the lane its
// number picks, under that lane's lock only, so publishers on different
// cores neither contend for a lock nor write the same cache lines; the
// send loop takes batches from the lanes round robin.
type lane struct {
	// mu guards the fields below. Lock order: node.mu, then a lane's mu;
	// never two lanes at once.
	mu         sync.Mutex
	queues     []*topicQueue // few topics: a slice beats a map
	rr         int           // next queue to serve, for fairness between topics
	queued     int
	nextExpiry int64 // no message queued in the lane has an earlier deadline
	// credit is budget reserved from node.used in chunks and not yet
	// charged to a message: one atomic add a chunk instead of a message.
	credit int64
	// slab[next:] is the rest of the lane's current message slab; an
	// index, not a reslice, so taking a message stores no pointer (no
	// write barrier while the GC marks).
	slab []msg
	next int
	// reuse[reuseAt:] are recycled messages, handed out before the slab's;
	// spares are more such lists, holding spareMsgs messages in all, and
	// empties the lists already handed out, which acked batches take for
	// their next messages (see recycle).
	reuse     []*msg
	reuseAt   int
	spares    [][]*msg
	spareMsgs int
	empties   [][]*msg
	_         [64]byte // keeps lanes off each other's cache lines
}

// maxSpareMsgs bounds the recycled messages a lane keeps (at 56 bytes a
// message, under half a MB): a full window of default-sized batches, so
// that one publisher keeping that many messages outstanding, as the
// liaison's client streams and BenchmarkPublish do, reuses them all
// (with 2,048, over half were still new), while a burst's leftovers
// beyond it go to the GC.
const maxSpareMsgs = 8192

// lane returns the lane for p's messages; lane 0 takes re-placed ones.
func (n *node) lane(p *publisher) *lane {
	if p == nil {
		return &n.lanes[0]
	}
	return &n.lanes[p.lane%numLanes]
}

// newMsg hands out a recycled message, or one from the lane's slab: one
// allocation per slabSize messages. l.mu is held.
//
// Reusing messages is what makes a recycled one cheap: its memory was
// written a moment ago and is still in the cache, where a fresh slab's
// must be fetched first, and the fences of the locks and atomics on the
// publish path wait for those stores. A recycled message's future may
// still be asked about its old message: that only reads state and wait,
// through atomics, and sees the old outcome acked (see msg.result).
func (l *lane) newMsg() *msg {
	for {
		if l.reuseAt < len(l.reuse) {
			m := l.reuse[l.reuseAt]
			l.reuseAt++
			if m.state.Load() != pending || m.x != nil {
				continue // cannot happen (see lane.recycle); left to the GC
			}
			if m.wait.Load() != nil {
				m.wait.Store(nil) // a Get of the old message left its channel
			}
			return m
		}
		if len(l.spares) == 0 {
			break
		}
		if l.reuse != nil && len(l.empties) < 4 {
			l.empties = append(l.empties, l.reuse[:0])
		}
		k := len(l.spares) - 1
		l.reuse, l.reuseAt = l.spares[k], 0
		l.spares[k] = nil
		l.spares = l.spares[:k]
		l.spareMsgs -= len(l.reuse)
	}
	if l.next == len(l.slab) {
		l.slab, l.next = make([]msg, slabSize), 0
	}
	m := &l.slab[l.next]
	l.next++
	return m
}

// recycle takes back the messages of b, a batch built in l and settled
// whole by its outcome, for newMsg to reuse, and gives b an empty message
// list in exchange. That is safe because nothing but b holds them: such a
// batch's messages are its own, never settled or moved on their own (see
// outcome), the ack took b out of flight, and their futures hold the
// outcome, which says acked.
func (l *lane) recycle(b *batch, recycled *atomic.Int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spareMsgs+len(b.msgs) > maxSpareMsgs {
		return
	}
	recycled.Add(int64(len(b.msgs)))
	l.spares = append(l.spares, b.msgs)
	l.spareMsgs += len(b.msgs)
	b.msgs = nil
	if k := len(l.empties); k > 0 {
		b.msgs = l.empties[k-1]
		l.empties[k-1] = nil
		l.empties = l.empties[:k-1]
	}
}

func (l *lane) queue(t queue.Topic) *topicQueue {
	for _, q := range l.queues {
		if q.topic == t {
			return q
		}
	}
	q := &topicQueue{topic: t}
	l.queues = append(l.queues, q)
	return q
}

// push queues m in its topic's newest batch in l, or a new one. l.mu is
// held; m's bytes are already charged to the node's budget. fresh and
// the outcome returned are as for batch.add.
func (n *node) push(l *lane, m *msg, payload []byte, fresh bool) *outcome {
	ws := wireSize(len(payload))
	q := l.queue(m.topic)
	maxMsgs, maxBytes := int(n.maxMsgs.Load()), int(n.maxBytes.Load())
	var b *batch
	if k := len(q.batches); k > 0 && q.batches[k-1].fits(ws, maxMsgs, maxBytes) {
		b = q.batches[k-1]
	} else {
		b = newBatch(q.topic)
		b.lane = l
		q.batches = append(q.batches, b)
	}
	out := b.add(m, payload, ws, fresh)
	l.nextExpiry = min(l.nextExpiry, m.deadline)
	l.queued++
	if l.queued == 1 || b.reachedHold(ws, maxMsgs, maxBytes) {
		n.wake()
	}
	return out
}

// reachedHold reports whether b, having just taken a message of wire size
// ws, became big enough to go while another batch is in flight: a send
// loop holding it (see take) must look again.
func (b *batch) reachedHold(ws, maxMsgs, maxBytes int) bool {
	minMsgs, minBytes := holdMin(maxMsgs, maxBytes)
	return len(b.msgs) == minMsgs || (b.size >= minBytes && b.size-ws < minBytes)
}

// holdMin is the size under which a batch waits while another is in
// flight on its stream: a quarter of the caps (256 messages or 256 KB by
// default).
func holdMin(maxMsgs, maxBytes int) (msgs, bytes int) {
	return max(maxMsgs/holdDivisor, 2), maxBytes / holdDivisor
}

func (n *node) wake() {
	select {
	case n.work <- struct{}{}:
	default:
	}
}

// reserve moves budget for a message of size bytes into l.credit, a chunk
// at a time when the budget has room for one. As before lanes, a message
// is admitted when it fits the budget or the budget is empty. l.mu is held.
func (n *node) reserve(l *lane, size int64) bool {
	limit := n.c.cfg.MaxBytesPerNode
	need := size - l.credit
	want := max(need, min(limit/64, 64<<10))
	for {
		u := n.used.Load()
		w := want
		switch {
		case u+w <= limit:
		case u+need <= limit || u == 0:
			w = need
		default:
			return false
		}
		if n.used.CompareAndSwap(u, u+w) {
			l.credit += w
			return true
		}
	}
}

// reclaim returns every lane's unused credit to the budget, so that a
// publisher waiting for room does not wait on bytes nobody uses.
func (n *node) reclaim() {
	for i := range n.lanes {
		l := &n.lanes[i]
		l.mu.Lock()
		c := l.credit
		l.credit = 0
		l.mu.Unlock()
		n.release(c)
	}
}

// waitRoom returns the channel that closes when bytes are released, or nil
// if a message of size bytes fits now.
func (n *node) waitRoom(size int64) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.room == nil {
		n.room = make(chan struct{})
	}
	n.roomWanted.Store(true)
	// After the flag: a release that missed it is seen here.
	if u := n.used.Load(); u == 0 || u+size <= n.c.cfg.MaxBytesPerNode {
		return nil
	}
	return n.room
}

// release returns bytes to the budget and wakes publishers waiting for room.
func (n *node) release(b int64) {
	if b == 0 {
		return
	}
	n.used.Add(-b)
	if n.roomWanted.Load() {
		n.mu.Lock()
		n.wakeRoomLocked()
		n.mu.Unlock()
	}
}

// releaseLocked is release with n.mu held.
func (n *node) releaseLocked(b int64) {
	if b == 0 {
		return
	}
	n.used.Add(-b)
	n.wakeRoomLocked()
}

func (n *node) wakeRoomLocked() {
	n.roomWanted.Store(false)
	if n.room != nil {
		close(n.room)
		n.room = nil
	}
}

// requeueFront puts messages back at the head of lane 0's queues, in new
// batches under the current caps, keeping their bytes: they were in flight
// on a stream that ended, or rejected as part of a too large batch.
// Resolved messages are dropped instead. n.mu is held.
func (n *node) requeueFront(ms []*msg) {
	type front struct {
		q       *topicQueue
		batches []*batch
	}
	var fronts []front
	cur := -1
	maxMsgs, maxBytes := int(n.maxMsgs.Load()), int(n.maxBytes.Load())
	l := &n.lanes[0]
	l.mu.Lock()
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
				fronts = append(fronts, front{q: l.queue(m.topic)})
				cur = len(fronts) - 1
			}
		}
		f := &fronts[cur]
		ws := wireSize(int(m.plen))
		if k := len(f.batches); k == 0 || !f.batches[k-1].fits(ws, maxMsgs, maxBytes) {
			f.batches = append(f.batches, newBatch(m.topic))
		}
		f.batches[len(f.batches)-1].add(m, m.payload(), ws, false)
		l.queued++
		l.nextExpiry = min(l.nextExpiry, m.deadline)
	}
	for _, f := range fronts {
		f.q.batches = append(f.batches, f.q.batches...)
	}
	queued := l.queued
	l.mu.Unlock()
	if queued > 0 {
		n.wake()
	}
}

// queuedLocked counts the messages queued in all lanes. n.mu is held.
func (n *node) queuedLocked() int {
	k := 0
	for i := range n.lanes {
		l := &n.lanes[i]
		l.mu.Lock()
		k += l.queued
		l.mu.Unlock()
	}
	return k
}

// drainLocked takes every queued message off the node for re-placement.
// n.mu is held.
func (n *node) drainLocked() []*msg {
	var out []*msg
	var bytes int64
	for i := range n.lanes {
		l := &n.lanes[i]
		l.mu.Lock()
		for _, q := range l.queues {
			for _, b := range q.batches {
				b.detach()
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
		l.queued = 0
		l.nextExpiry = math.MaxInt64
		l.mu.Unlock()
	}
	n.releaseLocked(bytes)
	return out
}

// expireQueued fails queued messages past their deadline. It walks a
// lane's queues only when the lane's earliest deadline has passed, which
// a healthy node never lets happen. n.mu is held.
func (n *node) expireQueued(now int64) {
	var freed int64
	for i := range n.lanes {
		l := &n.lanes[i]
		l.mu.Lock()
		if now < l.nextExpiry {
			l.mu.Unlock()
			continue
		}
		next := int64(math.MaxInt64)
		for _, q := range l.queues {
			kept := q.batches[:0]
			for _, b := range q.batches {
				f, d := b.compact(now, n.name)
				freed += f
				l.queued -= d
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
		l.nextExpiry = next
		l.mu.Unlock()
	}
	n.releaseLocked(freed)
}

type takeResult int

const (
	takeOK takeResult = iota
	takeEmpty
	takeFull
	takeHeld // only batches too small to go while others are in flight
	takeAgain
)

// takeLane pops the oldest batch of l's next topic (round robin) that has
// at least minMsgs messages or minBytes of frame, or nil; held reports a
// batch left queued for being smaller. A lane left empty gives its credit
// back.
func (n *node) takeLane(l *lane, minMsgs, minBytes int) (b *batch, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queued == 0 {
		return nil, false
	}
	var q *topicQueue
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
		q, l.rr = c, (j+1)%len(l.queues)
		break
	}
	if q == nil {
		return nil, held
	}
	b = q.popFront()
	l.queued -= len(b.msgs)
	if l.queued == 0 && l.credit > 0 {
		n.releaseLocked(l.credit)
		l.credit = 0
	}
	return b, held
}

// holdDivisor: see holdMin.
const holdDivisor = 4

// foldLanes adds to b, just taken from one lane, the oldest batch of b's
// topic in each other lane, while the caps allow: the node's writes go
// in one frame, not one frame per lane. Without it, at moderate load
// every lane's batch is small, a small batch goes only once the one
// before it is acked (see take), and with several publishers (one lane
// each) each lane got its turn only every few round trips: most of a
// cluster write's median latency (docs/performance.md, session 8).
// Under heavy load the batches are full and nothing fits. n.mu is held;
// each lane's lock is taken alone, as everywhere.
func (n *node) foldLanes(b *batch, maxMsgs, maxBytes int) {
	if b.lane == nil {
		return // not built in a lane (requeued): leave it as it is
	}
	for i := range n.lanes {
		l := &n.lanes[i]
		if l == b.lane || len(b.msgs) >= maxMsgs {
			continue
		}
		if o := n.takeFitting(l, b.topic, maxMsgs-len(b.msgs), maxBytes-b.size); o != nil {
			b.absorb(o)
		}
	}
}

// takeFitting pops the oldest batch of topic t in l if it has at most
// msgs messages and its messages at most bytes of frame, else nil.
func (n *node) takeFitting(l *lane, t queue.Topic, msgs, bytes int) *batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queued == 0 {
		return nil
	}
	for _, q := range l.queues {
		if q.topic != t || len(q.batches) == 0 {
			continue
		}
		o := q.batches[0]
		if len(o.msgs) > msgs || o.size-(batchOverhead+len(t)) > bytes {
			return nil
		}
		q.popFront()
		l.queued -= len(o.msgs)
		if l.queued == 0 && l.credit > 0 {
			n.releaseLocked(l.credit)
			l.credit = 0
		}
		return o
	}
	return nil
}

// take moves the oldest queued batch of the next lane (round robin) into
// flight on s. There is no linger: a stream with nothing in flight takes
// whatever is queued, so a lone write goes at once. But while a small
// batch (under a quarter of the caps, holdMin) is the latest in flight,
// the next small one waits (takeHeld), taking the writes that arrive
// meanwhile, until an ack comes or it reaches the quarter (push wakes the
// loop then). At moderate load every batch costs a frame, an ack, a log
// record and the wake-ups around them on both ends; sending each small
// batch the moment it could made a cluster write cost about twice its CPU
// at saturation (docs/performance.md, session 7). Under heavy load the
// batches in flight are big, nothing waits, and the window fills as
// before.
func (n *node) take(s *stream) (*batch, takeResult) {
	cfg := &n.c.cfg
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(s.pending) >= cfg.MaxInFlightBatches {
		return nil, takeFull
	}
	maxBytes, maxMsgs := int(n.maxBytes.Load()), int(n.maxMsgs.Load())
	minMsgs, minBytes := 0, 0
	if k := len(s.pending); k > 0 {
		if hm, hb := holdMin(maxMsgs, maxBytes); s.pending[k-1].small(hm, hb) {
			minMsgs, minBytes = hm, hb
		}
	}
	var b *batch
	held := false
	for i := range numLanes {
		var h bool
		b, h = n.takeLane(&n.lanes[(n.rr+i)%numLanes], minMsgs, minBytes)
		held = held || h
		if b != nil {
			n.rr = (n.rr + i + 1) % numLanes
			break
		}
	}
	if b == nil {
		if held {
			n.c.held.Add(1)
			return nil, takeHeld
		}
		return nil, takeEmpty
	}
	if b.size > maxBytes || len(b.msgs) > maxMsgs {
		// Built before the caps came down (HelloAck, CODE_TOO_LARGE).
		if len(b.msgs) > 1 {
			b.detach()
			ms := append([]*msg(nil), b.msgs...)
			putBatch(b)
			n.requeueFront(ms)
			return nil, takeAgain
		}
		if m := b.msgs[0]; !m.isDone() {
			m.resolve(fmt.Errorf("queue/pub: %q message of %d bytes exceeds node %s's batch limit of %d bytes: %w",
				m.topic, m.plen, n.name, maxBytes, queue.ErrInvalidMessage), nil)
		}
		n.releaseLocked(b.bytes)
		putBatch(b)
		return nil, takeAgain
	}
	n.foldLanes(b, maxMsgs, maxBytes)
	b.id = s.nextID
	s.nextID++
	b.sentAt = time.Now().UnixNano()
	if len(s.pending) == 0 {
		s.lastProgress = b.sentAt
	}
	s.pending = append(s.pending, b)
	n.inflight.Add(1)
	if len(n.streams) > 1 {
		n.wake() // let another stream take the rest, if any
	}
	return b, takeOK
}
