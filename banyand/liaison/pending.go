package liaison

import (
	"context"
	"sync"
)

// pendingQueue carries one client stream's writes from its receive loop
// to its answer loop, in arrival order: one goroutine pushes, one pops.
//
// Backpressure: push blocks while max writes are queued, until the answer
// loop takes one or ctx is done (then it reports false and queues
// nothing); the receive loop stops reading meanwhile, so gRPC flow
// control slows the client.
//
// Memory: the ring grows with what the stream has outstanding, doubling
// from minPendingRing up to max, and release gives it back to a pool for
// the next stream, so a stream costs what it holds, not the bound. SkyWalking
// OAP opens a stream a bulk flush; a channel of max entries made for each
// was most of what a stream cost the server. The invariant: a slot is
// zeroed when its write is popped, so a ring in the pool holds no write.
type pendingQueue struct {
	max int

	mu     sync.Mutex
	ring   []pendingWrite  // len is a power of two; head and n index it
	pooled *[]pendingWrite // what ring came in from the pool, and goes back in
	head   int
	n      int
	closed bool
	// popWaits and pushWaits say the answer or receive loop waits on
	// popWake or pushWake: the other side sends one token once it changed
	// what the waiter waits for. A token left over (the waiter gave up)
	// only makes the next wait look again.
	popWaits, pushWaits bool
	popWake, pushWake   chan struct{}
}

// minPendingRing is a new ring's length: what a stream outstanding a few
// acks at a time needs.
const minPendingRing = 64

// pendingRings are rings of streams that ended, empty, of any length.
var pendingRings = sync.Pool{New: func() any {
	r := make([]pendingWrite, minPendingRing)
	return &r
}}

func newPendingQueue(max int) *pendingQueue {
	r := pendingRings.Get().(*[]pendingWrite)
	q := &pendingQueue{max: max, ring: *r, pooled: r, popWake: make(chan struct{}, 1), pushWake: make(chan struct{}, 1)}
	if len(q.ring) > ceilPow2(max) { // a ring of a queue with a larger bound
		q.ring = make([]pendingWrite, min(minPendingRing, ceilPow2(max)))
	}
	return q
}

// push queues p, waiting while the queue is full (see pendingQueue); it
// reports false, p not queued, if ctx ends first.
func (q *pendingQueue) push(ctx context.Context, p pendingWrite) bool {
	q.mu.Lock()
	for q.n == q.max {
		q.pushWaits = true
		q.mu.Unlock()
		select {
		case <-q.pushWake:
		case <-ctx.Done():
			q.mu.Lock()
			q.pushWaits = false
			q.mu.Unlock()
			return false
		}
		q.mu.Lock()
	}
	if q.n == len(q.ring) {
		q.grow()
	}
	q.ring[(q.head+q.n)&(len(q.ring)-1)] = p
	q.n++
	wake := q.popWaits
	q.popWaits = false
	q.mu.Unlock()
	if wake {
		signal(q.popWake)
	}
	return true
}

// grow doubles the ring, the writes in order from index 0; under mu.
func (q *pendingQueue) grow() {
	next := make([]pendingWrite, min(2*len(q.ring), ceilPow2(q.max)))
	k := copy(next, q.ring[q.head:])
	copy(next[k:], q.ring[:q.head])
	q.ring, q.head = next, 0
}

// pop takes the oldest write, waiting while the queue is empty; false once
// it is closed and empty.
func (q *pendingQueue) pop() (pendingWrite, bool) {
	q.mu.Lock()
	for q.n == 0 {
		if q.closed {
			q.mu.Unlock()
			return pendingWrite{}, false
		}
		q.popWaits = true
		q.mu.Unlock()
		<-q.popWake
		q.mu.Lock()
	}
	p := q.ring[q.head]
	q.ring[q.head] = pendingWrite{} // the pool must not keep the write alive
	q.head = (q.head + 1) & (len(q.ring) - 1)
	q.n--
	wake := q.pushWaits
	q.pushWaits = false
	q.mu.Unlock()
	if wake {
		signal(q.pushWake)
	}
	return p, true
}

// close ends pushing: pop returns what is queued, then false.
func (q *pendingQueue) close() {
	q.mu.Lock()
	q.closed = true
	wake := q.popWaits
	q.popWaits = false
	q.mu.Unlock()
	if wake {
		signal(q.popWake)
	}
}

// release gives the ring back to the pool; call it once pop returned
// false, so the ring is empty and nobody uses the queue any more.
func (q *pendingQueue) release() {
	*q.pooled, q.ring = q.ring, nil
	pendingRings.Put(q.pooled)
}

// signal leaves a token in c (capacity 1) unless one is there already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func ceilPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
