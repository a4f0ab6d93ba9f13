package pub

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// msg is one published message and its future. It lives in exactly one
// place at a time (a node's queue, an in-flight batch, or the retry list)
// until it is resolved; resolution happens once, whoever gets there first
// (ack, failure, deadline sweep, shutdown), and later outcomes are ignored.
type msg struct {
	pub      *publisher // nil for broadcast requests
	topic    queue.Topic
	group    string
	shard    uint32
	payload  []byte
	deadline int64     // unix nano
	x        *msgExtra // rarely needed state, kept out of line to keep msg small

	// state moves pending → settling → done once; whoever wins the first
	// step (ack, failure, deadline sweep, shutdown) writes err and reply.
	// Lock-free because every message is settled on the ack path.
	state atomic.Uint32
	err   error
	wait  atomic.Pointer[chan struct{}] // made only when a Get has to wait
}

// msgExtra is the part of a msg only broadcasts and failures need. Every
// msg is written on the hot path, so keeping it small keeps it cheap.
type msgExtra struct {
	pinned   bool   // broadcast: belongs to one node, never re-placed
	node     string // the pinned message's node
	reply    []byte // the pinned message's reply
	avoid    string // node that last failed it; re-placement skips it
	lastFail error  // the last retryable failure, reported if the deadline passes
}

func (m *msg) pinned() bool { return m.x != nil && m.x.pinned }

func (m *msg) avoid() string {
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

func (m *msg) size() int64 { return int64(len(m.payload)) }

func (m *msg) expired(now int64) bool { return now >= m.deadline }

func (m *msg) isDone() bool { return m.state.Load() != pending }

// settle records the outcome if the message has none yet and reports
// whether it did. The caller accounts for it with pub.finish.
func (m *msg) settle(err error, reply []byte) bool {
	if !m.state.CompareAndSwap(pending, settling) {
		return false
	}
	m.err = err
	if m.pinned() {
		m.x.reply = reply
	}
	m.state.Store(done)
	// A Get that saw the state before the Store has published its channel
	// before its check, so this Load finds it.
	if ch := m.wait.Load(); ch != nil {
		close(*ch)
	}
	return true
}

// resolve settles m and counts it done for its publisher.
func (m *msg) resolve(err error, reply []byte) bool {
	if !m.settle(err, reply) {
		return false
	}
	if m.pub != nil {
		m.pub.finish(1)
	}
	return true
}

// Get implements queue.Future. The fast path is one atomic load; only a
// caller that must wait allocates a channel.
func (m *msg) Get(ctx context.Context) error {
	if m.state.Load() == done {
		return m.err
	}
	ch := make(chan struct{})
	if !m.wait.CompareAndSwap(nil, &ch) {
		ch = *m.wait.Load() // another Get is waiting: share its channel
	}
	if m.state.Load() == done {
		return m.err
	}
	select {
	case <-ch:
		return m.err
	case <-ctx.Done():
		return fmt.Errorf("queue/pub: waiting for the ack of a %q message: %w", m.topic, ctx.Err())
	}
}

// closedBit marks publisher.state once Close is called; the bits below
// count unresolved messages, so admission and the close check are one add.
const closedBit = int64(1) << 62

// slabSize messages are allocated together: one allocation per slabSize
// publishes instead of one per message.
const slabSize = 128

// publisher implements queue.BatchPublisher.
type publisher struct {
	c        *Client
	timeout  time.Duration
	state    atomic.Int64
	idle     chan struct{} // closed once closed and nothing is outstanding
	idleOnce sync.Once
	// slab is the rest of the current message slab. Publish is called by one
	// goroutine at a time per the BatchPublisher's use (one per client
	// stream); slabMu makes concurrent use safe all the same.
	slabMu sync.Mutex
	slab   []msg
	// route caches the last group's shard → primary node mapping: a client
	// write stream mostly writes one group, and this saves two map lookups
	// a message.
	route atomic.Pointer[routeCache]
}

var _ queue.BatchPublisher = (*publisher)(nil)

func (p *publisher) newMsg() *msg {
	p.slabMu.Lock()
	if len(p.slab) == 0 {
		p.slab = make([]msg, slabSize)
	}
	m := &p.slab[0]
	p.slab = p.slab[1:]
	p.slabMu.Unlock()
	return m
}

// finisher counts settled messages per publisher so the ack path does one
// atomic add per run of messages from the same publisher, not one each.
type finisher struct {
	p *publisher
	k int64
}

func (f *finisher) add(m *msg) {
	if m.pub != f.p {
		f.flush()
		f.p = m.pub
	}
	f.k++
}

func (f *finisher) flush() {
	if f.p != nil && f.k > 0 {
		f.p.finish(f.k)
	}
	f.k = 0
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
		return nil, fmt.Errorf("queue/pub: publish to %q: publisher %w", topic, queue.ErrClosed)
	}
	m := p.newMsg()
	m.pub, m.topic, m.group, m.shard, m.payload = p, topic, qm.Group, qm.Shard, qm.Payload
	m.deadline = p.c.now() + int64(p.timeout)
	if err := p.c.publish(ctx, m); err != nil {
		// Never handed to a node: the future is not returned, so resolve it
		// only to keep the outstanding count right.
		m.resolve(err, nil)
		return nil, err
	}
	return m, nil
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
