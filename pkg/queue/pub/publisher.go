package pub

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// msg is one published message and what its future waits on (with its
// batch's outcome, see msg.result). It lives in exactly one place at a
// time (a node's queue, an in-flight batch, or the retry list) until it is
// resolved; resolution happens once, whoever gets there first (ack,
// failure, deadline sweep, shutdown), and later outcomes are ignored. A
// message settled whole by its batch's outcome is then reused for a new
// one (lane.recycle); one settled on its own never is.
type msg struct {
	msgHead

	// state moves pending → settling → done once; whoever wins the first
	// step (ack, failure, deadline sweep, shutdown) writes err and reply.
	// Lock-free because a message may be settled on the ack path.
	state atomic.Uint32
	err   atomic.Pointer[error]         // nil for success; a pointer keeps msg small (56 bytes)
	wait  atomic.Pointer[chan struct{}] // made only when a Get has to wait
}

// msgHead is what routing and queueing read of a message. Publish builds
// one on its stack and the node copies it into a slab message under its
// lane's lock, so a message is allocated only once it is queued.
type msgHead struct {
	*msgKey
	deadline int64     // unix nano
	x        *msgExtra // rarely needed state, kept out of line to keep msg small
	shard    uint32
	// plen is the payload's length. The payload itself is not in msg: in a
	// batch it is in the batch's payloads, the frame as sent; out of one,
	// in x.payload (see batch.detach).
	plen uint32
}

// msgKey is a message's publisher, topic and group, shared by the
// messages of a publisher that have the same pair: one pointer a message
// instead of three keeps msg, allocated for every message, small, and
// saves the GC's write barriers on storing them.
type msgKey struct {
	pub   *publisher // nil for broadcast requests and replica copies
	topic queue.Topic
	group string
}

// msgExtra is the part of a msg only broadcasts and failures need. Every
// msg is written on the hot path, so keeping it small keeps it cheap.
type msgExtra struct {
	pinned   bool      // broadcast: belongs to one node, never re-placed
	node     string    // the pinned message's node
	reply    []byte    // the pinned message's reply
	avoid    string    // node that last failed it; re-placement skips it
	lastFail error     // the last retryable failure, reported if the deadline passes
	rep      *replicas // set on each copy of a replicated message
	payload  []byte    // set while the message is in no batch
}

// rep returns the replica set of a copy of a replicated message, or nil.
func (m *msgHead) rep() *replicas {
	if m.x == nil {
		return nil
	}
	return m.x.rep
}

func (m *msgHead) pinned() bool { return m.x != nil && m.x.pinned }

func (m *msgHead) avoid() string {
	if m.x == nil {
		return ""
	}
	return m.x.avoid
}

// failedOn records that node failed m (err, if any, says how). Only the
// message's current holder calls it.
func (m *msg) failedOn(node string, err error) {
	if m.x == nil {
		m.x = &msgExtra{}
	}
	m.x.avoid = node
	if err != nil {
		m.x.lastFail = err
	}
}

const (
	pending uint32 = iota
	settling
	done
)

func (m *msgHead) size() int64 { return int64(m.plen) }

// payload is the payload of a message that is in no batch.
func (m *msgHead) payload() []byte {
	if m.x == nil {
		return nil
	}
	return m.x.payload
}

// keepPayload stores the payload of m as it leaves a batch. Only the
// message's current holder calls it.
func (m *msg) keepPayload(p []byte) {
	if m.x == nil {
		m.x = &msgExtra{}
	}
	m.x.payload = p
}

func (m *msgHead) expired(now int64) bool { return now >= m.deadline }

func (m *msg) isDone() bool { return m.state.Load() != pending }

// settle records the outcome if the message has none yet and reports
// whether it did. The caller accounts for it with finished.
func (m *msg) settle(err error, reply []byte) bool {
	if err == nil && !m.pinned() {
		// Nothing to write first (err is still nil): one step.
		if !m.state.CompareAndSwap(pending, done) {
			return false
		}
	} else {
		if !m.state.CompareAndSwap(pending, settling) {
			return false
		}
		if err != nil {
			m.err.Store(&err)
		}
		if m.pinned() {
			m.x.reply = reply
		}
		m.state.Store(done)
	}
	// A Get that saw the state before the Store has published its channel
	// before its check, so this Load finds it.
	if ch := m.wait.Load(); ch != nil {
		close(*ch)
	}
	return true
}

// resolve settles m and accounts for it.
func (m *msg) resolve(err error, reply []byte) bool {
	if !m.settle(err, reply) {
		return false
	}
	m.finished(err)
	return true
}

// finished tells whoever waits on a settled m: its publisher's count, or
// for a copy of a replicated message, the message's replica set.
func (m *msg) finished(err error) {
	switch {
	case m.pub != nil:
		m.pub.finish(1)
	case m.rep() != nil:
		m.x.rep.copyDone(m, err)
	}
}

// result returns m's outcome, if it has one yet; o is the outcome of the
// batch m was queued in as one of its own, from m's future, or nil.
//
// An acked o means acked, and is checked first and last: once o is acked
// nothing settles m on its own (see outcome), and the queue may recycle m
// for a new message (see lane.recycle). Only in between may m's state be
// a new message's; a second look at o tells. A message's own state is
// read only through atomics or after one, so a reader of a recycled m
// races with no write.
func (m *msg) result(o *outcome) (err error, ok bool) {
	if o != nil && o.acked.Load() {
		return nil, true
	}
	if m.state.Load() == done {
		err := m.failure()
		if o != nil && o.acked.Load() {
			return nil, true // m is a recycled message now
		}
		return err, true
	}
	if o != nil && o.acked.Load() {
		return nil, true
	}
	return nil, false
}

// failure is the error a done m settled with, or nil.
func (m *msg) failure() error {
	if e := m.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Wait implements queue.Waiter; arg is m's outcome (see result). The
// fast path is an atomic load or two; only a caller that must wait
// allocates a channel.
func (m *msg) Wait(ctx context.Context, arg any) error {
	o, _ := arg.(*outcome)
	if err, ok := m.result(o); ok {
		return err
	}
	ch := make(chan struct{})
	if !m.wait.CompareAndSwap(nil, &ch) {
		ch = *m.wait.Load() // another Get is waiting: share its channel
	}
	var och chan struct{} // closed when m's batch outcome is acked
	if o != nil {
		och = make(chan struct{})
		if !o.wait.CompareAndSwap(nil, &och) {
			och = *o.wait.Load()
		}
	}
	if err, ok := m.result(o); ok {
		return err
	}
	select {
	case <-ch:
	case <-och:
	case <-ctx.Done():
		// Not m.topic: m may be recycled by now.
		return fmt.Errorf("queue/pub: waiting for the ack of a message: %w", ctx.Err())
	}
	err, _ := m.result(o)
	return err
}

// closedBit marks publisher.state once Close is called; the bits below
// count unresolved messages, so admission and the close check are one add.
const closedBit = int64(1) << 62

// slabSize messages are allocated together: one allocation per slabSize
// publishes instead of one per message.
const slabSize = 128

// publisher implements queue.BatchPublisher. It may be used concurrently,
// though one client write stream uses it from one goroutine.
type publisher struct {
	c        *Client
	lane     uint32 // picks the lane of each node its messages go to
	timeout  time.Duration
	state    atomic.Int64
	idle     chan struct{} // closed once closed and nothing is outstanding
	idleOnce sync.Once
	// route caches the last topic and group's key and shard → primary
	// node mapping: a client write stream mostly writes one pair, and one
	// load and a few compares then do what the router's maps would.
	route atomic.Pointer[routeCache]
}

var _ queue.BatchPublisher = (*publisher)(nil)

// finisher counts settled messages per publisher so the ack path does one
// atomic add per publisher and batch, not one per message: messages of the
// few publishers writing to a node interleave in its batches.
type finisher struct {
	ps [4]*publisher
	ks [4]int64
	n  int
}

func (f *finisher) add(m *msg) {
	if m.pub == nil {
		m.finished(nil)
		return
	}
	for i := range f.n {
		if f.ps[i] == m.pub {
			f.ks[i]++
			return
		}
	}
	if f.n == len(f.ps) {
		f.flush()
	}
	f.ps[f.n], f.ks[f.n] = m.pub, 1
	f.n++
}

func (f *finisher) flush() {
	for i := range f.n {
		f.ps[i].finish(f.ks[i])
		f.ps[i] = nil
	}
	f.n = 0
}

func (p *publisher) finish(k int64) {
	if p.state.Add(-k) == closedBit {
		p.idleOnce.Do(func() { close(p.idle) })
	}
}

// Publish routes msg to its shard's node and queues it there; see Client
// for when it blocks. The returned future fails with queue.ErrDeadline if
// no node acks the message within the publisher's timeout.
func (p *publisher) Publish(ctx context.Context, topic queue.Topic, qm queue.Message) (queue.Future, error) {
	if p.state.Add(1)&closedBit != 0 {
		p.finish(1)
		return queue.Future{}, fmt.Errorf("queue/pub: publish to %q: publisher %w", topic, queue.ErrClosed)
	}
	if uint64(len(qm.Payload)) > math.MaxUint32 { // msgHead.plen; far over any batch cap anyway
		p.finish(1)
		return queue.Future{}, fmt.Errorf("queue/pub: publish to %q: %d byte payload: %w", topic, len(qm.Payload), queue.ErrInvalidMessage)
	}
	c := p.c
	rc := p.cache(c.place.Current(), nil, topic, qm.Group)
	h := msgHead{
		msgKey: rc.key, shard: qm.Shard, plen: uint32(len(qm.Payload)),
		deadline: c.now() + int64(p.timeout),
	}
	if rc.replicated {
		return c.publishCopies(ctx, h, qm.Payload)
	}
	// The common case: the shard's primary is up and has room. Anything
	// else (no such node, a full budget, the node just left) takes the
	// general path, which routes around, waits or reports.
	if int(h.shard) < len(rc.shards) && !c.closed.Load() {
		if n := rc.shards[h.shard]; n != nil && !n.down.Load() {
			m, o, _, err := n.enqueue(&h, qm.Payload, nil)
			switch {
			case err != nil:
				p.finish(1)
				return queue.Future{}, err
			case m != nil:
				return queue.NewFuture(m, o), nil
			}
		}
	}
	m, o, err := c.publish(ctx, &h, qm.Payload, nil)
	if err != nil {
		p.finish(1) // nothing was queued and no future handed out
		return queue.Future{}, err
	}
	return queue.NewFuture(m, o), nil
}

// Close waits until every message this publisher accepted is acked or
// failed. Messages fail by their deadline at the latest, so it is bounded
// by the publisher's timeout (plus one tick).
func (p *publisher) Close() error {
	if p.state.Or(closedBit)&^closedBit == 0 {
		p.idleOnce.Do(func() { close(p.idle) })
	}
	<-p.idle
	return nil
}
