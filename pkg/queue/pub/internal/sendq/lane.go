package sendq

import (
	"sync"
	"sync/atomic"

	"github.com/banyand-io/banyand/pkg/queue"
)

// topicQueue holds one topic's queued batches, oldest first. Only the
// newest takes appends; Take takes the oldest whole.
type topicQueue struct {
	topic   queue.Topic
	batches []*Batch
}

func (q *topicQueue) popFront() *Batch {
	b := q.batches[0]
	copy(q.batches, q.batches[1:]) // a handful of batches: cheaper than regrowing
	q.batches[len(q.batches)-1] = nil
	q.batches = q.batches[:len(q.batches)-1]
	return b
}

// numLanes is how many lanes a queue has.
const numLanes = 4

// slabSize messages are allocated together: one allocation per slabSize
// pushes instead of one per message.
const slabSize = 128

// maxSpareMsgs bounds the recycled messages a lane keeps (at 56 bytes a
// message, under half a MB): a full window of default-sized batches, so
// that one publisher keeping that many messages outstanding, as the
// liaison's client streams and BenchmarkPublish do, reuses them all
// (with 2,048, over half were still new), while a burst's leftovers
// beyond it go to the GC.
const maxSpareMsgs = 8192

// lane is one share of a queue. A publisher appends to the lane its
// owner's number picks, under that lane's lock only, so publishers on
// different cores neither contend for a lock nor write the same cache
// lines; Take serves the lanes round robin.
type lane struct {
	// mu guards the fields below. Lock order: Queue.mu, then a lane's mu;
	// never two lanes at once.
	mu         sync.Mutex
	queues     []*topicQueue // few topics: a slice beats a map
	rr         int           // next queue to serve, for fairness between topics
	queued     int
	nextExpiry int64 // no message queued in the lane has an earlier deadline
	// credit is budget reserved from Queue.used in chunks and not yet
	// charged to a message: one atomic add a chunk instead of a message.
	credit int64
	// slab[next:] is the rest of the lane's current message slab; an
	// index, not a reslice, so taking a message stores no pointer (no
	// write barrier while the GC marks).
	slab []Msg
	next int
	// reuse[reuseAt:] are recycled messages, handed out before the slab's;
	// spares are more such lists, holding spareMsgs messages in all, and
	// empties the lists already handed out, which acked batches take for
	// their next messages (see recycle).
	reuse     []*Msg
	reuseAt   int
	spares    [][]*Msg
	spareMsgs int
	empties   [][]*Msg
	_         [64]byte // keeps lanes off each other's cache lines
}

// newMsg hands out a recycled message, or one from the lane's slab: one
// allocation per slabSize messages. l.mu is held.
//
// Reusing messages is what makes a recycled one cheap: its memory was
// written a moment ago and is still in the cache, where a fresh slab's
// must be fetched first, and the fences of the locks and atomics on the
// publish path wait for those stores. A recycled message's future may
// still be asked about its old message: that only reads state and wait,
// through atomics, and sees the old outcome acked (see Msg.result).
func (l *lane) newMsg() *Msg {
	for {
		if l.reuseAt < len(l.reuse) {
			m := l.reuse[l.reuseAt]
			l.reuseAt++
			if m.state.Load() != pending || m.X != nil {
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
		l.slab, l.next = make([]Msg, slabSize), 0
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
func (l *lane) recycle(b *Batch, recycled *atomic.Int64) {
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
