package sendq

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/banyand-io/banyand/pkg/queue"
)

// Msg is one published message and what its future waits on (with its
// batch's outcome, see Msg.result). It lives in exactly one place at a
// time (a queue, an in-flight batch, or its caller's retry list) until it
// is resolved; resolution happens once, whoever gets there first (ack,
// failure, deadline sweep, shutdown), and later outcomes are ignored. A
// message settled whole by its batch's outcome is then reused for a new
// one (see the package doc); one settled on its own never is.
type Msg struct {
	Head

	// state moves pending → settling → done once; whoever wins the first
	// step (ack, failure, deadline sweep, shutdown) writes err and reply.
	// Lock-free because a message may be settled on the ack path.
	state atomic.Uint32
	err   atomic.Pointer[error]         // nil for success; a pointer keeps Msg small (56 bytes)
	wait  atomic.Pointer[chan struct{}] // made only when a Get has to wait
}

// Head is what routing and queueing read of a message. A publisher builds
// one on its stack and Queue.Push copies it into a slab message under its
// lane's lock, so a message is allocated only once it is queued.
type Head struct {
	*Key
	Deadline int64  // unix nano
	X        *Extra // rarely needed state, kept out of line to keep Msg small
	Shard    uint32
	// Plen is the payload's length. The payload itself is not in Msg: in a
	// batch it is in the batch's payloads, the frame as sent; out of one,
	// in X.Payload (see Batch.detach).
	Plen uint32
}

// Key is a message's owner, topic and group, shared by the messages of an
// owner that have the same pair: one pointer a message instead of three
// keeps Msg, allocated for every message, small, and saves the GC's write
// barriers on storing them.
type Key struct {
	Owner *Owner // nil for messages nobody counts (broadcast requests, replica copies)
	Topic queue.Topic
	Group string
}

// Extra is the part of a Msg only broadcasts, replicas and failures need.
// Every Msg is written on the hot path, so keeping it small keeps it cheap.
type Extra struct {
	Pinned   bool   // belongs to one node (Node), never re-placed; its reply is kept
	Node     string // the pinned message's node
	Reply    []byte // the pinned message's reply
	Avoid    string // node that last failed it; re-placement skips it
	LastFail error  // the last retryable failure, reported if the deadline passes
	Sink     Sink   // told when the message settles, for a message with no Owner
	Payload  []byte // set while the message is in no batch
	// Held is the queue whose budget still counts the message while it
	// waits to be re-placed (taken off by Drain or Failed), nil once it
	// is queued again or let go (see Queue.PushForced, Msg.Unhold).
	Held *Queue
}

// Sink hears of the settling of a message that has no Owner (a replica
// copy, whose replica set folds its copies into one future).
type Sink interface {
	Settled(m *Msg, err error)
}

const (
	pending uint32 = iota
	settling
	done
)

// Size is the payload's length, what the byte budget counts.
func (h *Head) Size() int64 { return int64(h.Plen) }

// Expired reports whether the message's deadline is at or before now.
func (h *Head) Expired(now int64) bool { return now >= h.Deadline }

// Pinned reports a broadcast request, which belongs to one node.
func (h *Head) Pinned() bool { return h.X != nil && h.X.Pinned }

// Avoid is the node that last failed the message, or "".
func (h *Head) Avoid() string {
	if h.X == nil {
		return ""
	}
	return h.X.Avoid
}

// Payload is the payload of a message that is in no batch.
func (h *Head) Payload() []byte {
	if h.X == nil {
		return nil
	}
	return h.X.Payload
}

func (m *Msg) extra() *Extra {
	if m.X == nil {
		m.X = &Extra{}
	}
	return m.X
}

// FailedOn records that node failed m (err, if any, says how). Only the
// message's current holder calls it.
func (m *Msg) FailedOn(node string, err error) {
	x := m.extra()
	x.Avoid = node
	if err != nil {
		x.LastFail = err
	}
}

// hold records that q's budget keeps counting m while m waits to be
// re-placed. Only the message's current holder calls it.
func (m *Msg) hold(q *Queue) { m.extra().Held = q }

// Unhold gives back the budget m still holds on the queue it was taken
// off, for a message that leaves re-placement other than by PushForced
// (settled, or a replica copy given up). Only the message's current
// holder calls it; a message holding nothing is left alone.
func (m *Msg) Unhold() {
	if m.X == nil || m.X.Held == nil {
		return
	}
	q := m.X.Held
	m.X.Held = nil
	q.release(m.Size())
}

// keepPayload stores the payload of m as it leaves a batch. Only the
// message's current holder calls it.
func (m *Msg) keepPayload(p []byte) { m.extra().Payload = p }

// IsDone reports whether m is settled.
func (m *Msg) IsDone() bool { return m.state.Load() != pending }

// Settle records the outcome if the message has none yet and reports
// whether it did. It accounts for it with no one: a caller that settles
// a message nobody counted (one never queued) uses it; see Resolve.
func (m *Msg) Settle(err error, reply []byte) bool {
	if err == nil && !m.Pinned() {
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
		if m.Pinned() {
			m.X.Reply = reply
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

// Resolve settles m and accounts for it: its owner's count, or its sink.
func (m *Msg) Resolve(err error, reply []byte) bool {
	if !m.Settle(err, reply) {
		return false
	}
	m.finished(err)
	return true
}

func (m *Msg) finished(err error) {
	switch {
	case m.Owner != nil:
		m.Owner.Finish(1)
	case m.X != nil && m.X.Sink != nil:
		m.X.Sink.Settled(m, err)
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
func (m *Msg) result(o *outcome) (err error, ok bool) {
	if o != nil && o.acked.Load() {
		return nil, true
	}
	if m.state.Load() == done {
		err := m.Failure()
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

// Failure is the error a settled m settled with, or nil.
func (m *Msg) Failure() error {
	if e := m.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Wait implements queue.Waiter; tok holds m's batch outcome, if m was
// one of its batch's own (see result): m's memory may carry another
// message by the time its future is asked, the outcome never does. The
// fast path is an atomic load or two; only a caller that must wait
// allocates a channel.
func (m *Msg) Wait(ctx context.Context, tok queue.Token) error {
	o := queue.TokenValue[outcome](tok)
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
		// Not m.Topic: m may be recycled by now.
		return fmt.Errorf("queue/pub: waiting for the ack of a message: %w", ctx.Err())
	}
	err, _ := m.result(o)
	return err
}

// future is m's future; o is its batch's outcome, or nil.
func (m *Msg) future(o *outcome) queue.Future {
	if o == nil {
		return queue.NewFuture(m, queue.Token{})
	}
	return queue.NewFuture(m, queue.MakeToken(o))
}

// Future is the future of m, a message that is not one of a batch's own
// (made by its caller, not by Push).
func (m *Msg) Future() queue.Future { return m.future(nil) }

// closedBit marks Owner.state once Close is called; the bits below count
// unresolved messages, so admission and the close check are one add.
const closedBit = int64(1) << 62

// Owner counts one publisher's unresolved messages, so that its Close can
// wait for them: the queue settles a clean batch's messages with one
// Finish per owner, not one per message. Its lane picks the lane of each
// queue its messages go to, so that owners on different cores do not
// share a lock.
type Owner struct {
	lane     uint32
	state    atomic.Int64
	idle     chan struct{} // closed once closed and nothing is outstanding
	idleOnce sync.Once
}

// NewOwner returns an owner whose messages go to lane lane%numLanes.
func NewOwner(lane uint32) *Owner { return &Owner{lane: lane, idle: make(chan struct{})} }

// Admit counts one more message, unless the owner is closed: then it
// reports false and counts nothing.
func (o *Owner) Admit() bool {
	if o.state.Add(1)&closedBit != 0 {
		o.Finish(1)
		return false
	}
	return true
}

// Finish uncounts k messages, settled or never queued.
func (o *Owner) Finish(k int64) {
	if o.state.Add(-k) == closedBit {
		o.idleOnce.Do(func() { close(o.idle) })
	}
}

// Close stops admission and waits until every admitted message is
// finished.
func (o *Owner) Close() {
	if o.state.Or(closedBit)&^closedBit == 0 {
		o.idleOnce.Do(func() { close(o.idle) })
	}
	<-o.idle
}

// finisher counts settled messages per owner so an ack does one atomic
// add per owner and batch, not one per message: messages of the few
// owners writing to a node interleave in its batches.
type finisher struct {
	os [4]*Owner
	ks [4]int64
	n  int
}

func (f *finisher) add(m *Msg) {
	if m.Owner == nil {
		m.finished(nil)
		return
	}
	for i := range f.n {
		if f.os[i] == m.Owner {
			f.ks[i]++
			return
		}
	}
	if f.n == len(f.os) {
		f.flush()
	}
	f.os[f.n], f.ks[f.n] = m.Owner, 1
	f.n++
}

func (f *finisher) flush() {
	for i := range f.n {
		f.os[i].Finish(f.ks[i])
		f.os[i] = nil
	}
	f.n = 0
}

// DeadlineErr is the error of a message not acked before its deadline;
// node is the node it was last queued on or sent to.
func DeadlineErr(m *Msg, node string) error {
	if m.X != nil && m.X.LastFail != nil {
		return fmt.Errorf("queue/pub: %q message for group %q shard %d (last node %q) not acked before its deadline "+
			"(last failure: %v): %w", m.Topic, m.Group, m.Shard, node, m.X.LastFail, queue.ErrDeadline)
	}
	return fmt.Errorf("queue/pub: %q message for group %q shard %d (last node %q) not acked before its deadline: %w",
		m.Topic, m.Group, m.Shard, node, queue.ErrDeadline)
}
