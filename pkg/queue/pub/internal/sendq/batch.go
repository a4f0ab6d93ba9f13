package sendq

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/banyand-io/banyand/pkg/queue"
)

// FrameOverhead over-estimates a Batch frame's encoding beyond its
// messages (oneof tag, batch_id, topic tag and length, deadline and
// timeout).
const FrameOverhead = 48

// Batch is one Batch frame: built in a lane's topic queue, where
// publishers append to the newest batch while it has room, then in flight
// on a window until acked. payloads is the frame's message list as is, so
// sending a batch copies nothing per message.
type Batch struct {
	id          uint64
	topic       queue.Topic
	msgs        []*Msg
	payloads    [][]byte // payloads[i] is msgs[i]'s payload (see detach)
	size        int      // encoded frame size estimate, checked against the batch byte cap
	bytes       int64    // payload bytes, charged to the budget
	minDeadline int64    // of unresolved messages: when the sweep must look
	maxDeadline int64    // sent as the frame's deadline: the batch is moot after it
	sentAt      int64    // unix nano it was taken into flight, for the ack latency

	// out settles the batch's own messages at once on a clean, on-time
	// ack (see outcome and the package doc). dirty says out may not be
	// used.
	out   *outcome
	lane  *lane // the lane it was built in, which takes its messages back (see lane.recycle)
	dirty bool
	npub  int
	pubs  [4]*Owner // the own messages' owners, and how many each has
	count [4]int64
	// merged are the clean batches of other lanes whose messages joined
	// this one's frame (see absorb): emptied, they keep their outcome
	// and owner counts for ack to settle.
	merged []*Batch
}

// ID is the batch's id on its window, sent in the frame and matched by
// the ack.
func (b *Batch) ID() uint64 { return b.id }

// Topic is the topic of every message of the batch.
func (b *Batch) Topic() queue.Topic { return b.topic }

// Deadline is the latest deadline of its messages: the batch is moot after it.
func (b *Batch) Deadline() int64 { return b.maxDeadline }

// Payloads is the frame's message list, to send as is. It is b's: the
// caller reads it only until b may be acked.
func (b *Batch) Payloads() [][]byte { return b.payloads }

// Len is the number of messages in b.
func (b *Batch) Len() int { return len(b.msgs) }

// SentAt is when b was taken into flight (unix nano).
func (b *Batch) SentAt() int64 { return b.sentAt }

var batchPool = sync.Pool{New: func() any { return new(Batch) }}

func newBatch(topic queue.Topic) *Batch {
	b := batchPool.Get().(*Batch)
	b.topic, b.size, b.minDeadline = topic, FrameOverhead+len(topic), math.MaxInt64
	b.out = new(outcome)
	return b
}

func putBatch(b *Batch) {
	clear(b.msgs)
	recycle(b)
}

// putAckedBatch is putBatch for a batch settled by ack. Its message list
// is usually an empty one from lane.recycle; if the lane had no room for
// the messages, it leaves their pointers for the next user to overwrite:
// clearing a thousand pointers to messages costs a write barrier each
// while the GC marks, and they keep nothing but the messages' own small
// structs alive (a batch's own messages never carry a payload or error
// of their own), for as long as the pool keeps the batch.
func putAckedBatch(b *Batch) { recycle(b) }

func recycle(b *Batch) {
	clear(b.payloads) // payloads are big: never kept
	clear(b.merged)   // put back by ack, or left to the GC with their outcomes unset
	*b = Batch{msgs: b.msgs[:0], payloads: b.payloads[:0], merged: b.merged[:0]}
	batchPool.Put(b)
}

// absorb moves the messages of o, a batch of another lane for the same
// topic, to the end of b, so both go in one frame (see Queue.Take). The
// messages o owned keep o's outcome in their futures: while b and o are
// both clean b keeps o, emptied, and acks it with itself; otherwise b is
// dirty, its messages settle one by one and o's outcome is never set,
// as for any batch whose messages leave it.
func (b *Batch) absorb(o *Batch) {
	b.msgs = append(b.msgs, o.msgs...)
	b.payloads = append(b.payloads, o.payloads...)
	b.size += o.size - (FrameOverhead + len(o.topic))
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
// frame (see Queue.Take).
func (b *Batch) small(minMsgs, minBytes int) bool {
	return len(b.msgs) < minMsgs && b.size < minBytes
}

// fits reports whether a message of wire size ws may join b under the caps.
// An empty batch takes any message; Take fails one that is over the cap alone.
func (b *Batch) fits(ws, maxMsgs, maxBytes int) bool {
	return len(b.msgs) == 0 || (len(b.msgs) < maxMsgs && b.size+ws <= maxBytes)
}

// add appends m. fresh says m comes straight from Push and nobody holds
// its future yet: it may become one of b's own, and then add returns b's
// outcome for its future.
func (b *Batch) add(m *Msg, payload []byte, ws int, fresh bool) (out *outcome) {
	if fresh && m.Owner != nil {
		out = b.own(m)
	} else {
		b.dirty = true
	}
	b.msgs = append(b.msgs, m)
	b.payloads = append(b.payloads, payload)
	b.size += ws
	b.bytes += m.Size()
	b.minDeadline = min(b.minDeadline, m.Deadline)
	b.maxDeadline = max(b.maxDeadline, m.Deadline)
	return out
}

// expire fails the batch's messages past their deadline. Their bytes stay
// charged until the batch is acked or its window is requeued.
func (b *Batch) expire(now int64, node string) {
	next := int64(math.MaxInt64)
	for _, m := range b.msgs {
		switch {
		case m.IsDone():
		case m.Expired(now):
			m.Resolve(DeadlineErr(m, node), nil)
			b.dirty = true
		default:
			next = min(next, m.Deadline)
		}
	}
	b.minDeadline = next
}

// compact drops resolved messages from a queued batch, failing those past
// their deadline first, and returns the payload bytes it dropped.
func (b *Batch) compact(now int64, node string) (freed int64, dropped int) {
	kept := 0
	b.size, b.bytes = FrameOverhead+len(b.topic), 0
	b.minDeadline, b.maxDeadline = math.MaxInt64, 0
	for i, m := range b.msgs {
		if !m.IsDone() && m.Expired(now) {
			m.Resolve(DeadlineErr(m, node), nil)
		}
		if m.IsDone() {
			freed += m.Size()
			dropped++
			b.dirty = true
			continue
		}
		b.msgs[kept], b.payloads[kept] = m, b.payloads[i]
		kept++
		b.size += wireSize(int(m.Plen))
		b.bytes += m.Size()
		b.minDeadline = min(b.minDeadline, m.Deadline)
		b.maxDeadline = max(b.maxDeadline, m.Deadline)
	}
	clear(b.msgs[kept:])
	clear(b.payloads[kept:])
	b.msgs, b.payloads = b.msgs[:kept], b.payloads[:kept]
	return freed, dropped
}

// outcome is the ack of a batch's own messages: one store settles them
// all, and their owners' counts drop by a batch at a time. It is safe
// because once a clean batch is out of flight nothing else can settle its
// messages: no message of it has been settled or moved (that makes the
// batch dirty), and a message that later leaves a batch only does so from
// a dirty or discarded one, whose outcome is never set. So an acked
// outcome is the final word on its messages, and once it is, the messages
// themselves may be reused (see lane.recycle): their futures hold the
// outcome as well as the message (see Msg.result).
type outcome struct {
	acked atomic.Bool
	wait  atomic.Pointer[chan struct{}] // made only when a Get has to wait
}

// ack settles the own messages of b, which is clean and out of flight.
func (b *Batch) ack() {
	o := b.out
	o.acked.Store(true)
	// A Get that saw acked unset has published its channel before its
	// check, so this Load finds it.
	if ch := o.wait.Load(); ch != nil {
		close(*ch)
	}
	for i := range b.npub {
		b.pubs[i].Finish(b.count[i])
	}
	for _, o := range b.merged {
		o.ack()
		putBatch(o)
	}
}

// own makes fresh message m one of b's own, if b is still clean, and
// returns b's outcome; else it marks b dirty and returns nil. The outcome
// goes into m's future only, never into m: m may be recycled once the
// outcome is acked, while its future lives on.
func (b *Batch) own(m *Msg) *outcome {
	if b.dirty {
		return nil
	}
	for i := range b.npub {
		if b.pubs[i] == m.Owner {
			b.count[i]++
			return b.out
		}
	}
	if b.npub == len(b.pubs) {
		b.dirty = true
		return nil
	}
	b.pubs[b.npub], b.count[b.npub] = m.Owner, 1
	b.npub++
	return b.out
}

// detach stores each unresolved message's payload in the message as the
// messages leave b (requeued, drained or re-placed): out of a batch, a
// message keeps its own payload.
func (b *Batch) detach() {
	for i, m := range b.msgs {
		if !m.IsDone() {
			m.keepPayload(b.payloads[i])
		}
	}
}
