package bus

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// publisher is the Bus's BatchPublisher. Publish only queues a message; one
// delivery goroutine per publisher, running only while it has work, hands
// whatever is queued, up to MaxBatch messages of one topic, to the topic's
// listener as one Batch, waits for it to return and starts again. Under
// light load batches are small; under heavy load they grow while the
// listener works, so a listener that commits once per batch amortizes its
// sync. Payloads reach the listener as they are, without copying: the
// caller leaves them alone until their future succeeded.
//
// Backpressure: Publish blocks while MaxPending messages are queued and not
// yet handed to a listener, until the delivery goroutine takes some or ctx
// is done (then ErrResourceExhausted).
type publisher struct {
	bus     *Bus
	timeout time.Duration

	// mu guards everything below. Publish appends to open; the delivery
	// goroutine takes ready batches first, then open.
	mu       sync.Mutex
	ready    []*batch      // full batches, oldest first
	open     *batch        // batch still taking messages
	queued   int           // messages in ready and open
	space    chan struct{} // closed when queued drops; nil if nobody waits
	flushing bool          // a delivery goroutine is running
	closed   bool
	last     time.Time     // deadline of the newest message
	sizeHint int           // messages in the last batch delivered
	drained  chan struct{} // closed once closed and nothing is left to deliver
	isDrain  bool          // drained is closed
}

// batch is a batch being formed or delivered. Its futures read their
// outcome from it once done is closed.
type batch struct {
	topic    queue.Topic
	l        queue.Listener
	msgs     [][]byte
	acks     []ack     // acks[i] is msgs[i]'s future
	deadline time.Time // latest deadline of its messages; zero = none
	done     chan struct{}

	// Written before done is closed.
	err  error   // fails every message
	errs []error // per message, nil if all succeeded

	// mu orders completion against a Get that gives up at its deadline, so
	// that a message reported as ErrDeadline is never later reported acked.
	mu          sync.Mutex
	completed   bool
	completedAt time.Time
}

// ack is what one message's Future waits on. Acks live in their batch's
// slice, so that Publish allocates nothing per message. A Future points at
// its ack; when a later append moves the slice, the Future keeps the old
// copy, which is as good: an ack is written once, under publisher.mu,
// before its Future is returned, and never again.
type ack struct {
	b        *batch
	idx      int
	deadline time.Time
}

// Publish implements queue.BatchPublisher. A topic without a listener
// fails here, with ErrUnknownTopic.
func (p *publisher) Publish(ctx context.Context, topic queue.Topic, msg queue.Message) (queue.Future, error) {
	if p.bus.closed() {
		return queue.Future{}, fmt.Errorf("bus: publish to %q: %w", topic, queue.ErrClosed)
	}
	var deadline time.Time
	if p.timeout > 0 {
		deadline = time.Now().Add(p.timeout)
	}
	cfg := &p.bus.cfg
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return queue.Future{}, fmt.Errorf("bus: publish to %q: publisher %w", topic, queue.ErrClosed)
		}
		if p.queued < cfg.MaxPending {
			break
		}
		if p.space == nil {
			p.space = make(chan struct{})
		}
		space := p.space
		p.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return queue.Future{}, fmt.Errorf("bus: publish to %q: %d messages queued: %w (%w)",
				topic, cfg.MaxPending, queue.ErrResourceExhausted, ctx.Err())
		}
		p.mu.Lock()
	}
	b := p.open
	if b == nil || b.topic != topic || len(b.msgs) >= cfg.MaxBatch {
		l, err := p.bus.listener(topic)
		if err != nil {
			p.mu.Unlock()
			return queue.Future{}, err
		}
		if b != nil {
			p.ready = append(p.ready, b)
		}
		// The last batch's size is the best guess of this one's: under a
		// steady load it spares the appends below most of their growth.
		n := min(max(p.sizeHint, 1), cfg.MaxBatch)
		b = &batch{topic: topic, l: l, msgs: make([][]byte, 0, n), acks: make([]ack, 0, n), done: make(chan struct{})}
		p.open = b
	}
	b.acks = append(b.acks, ack{b: b, idx: len(b.msgs), deadline: deadline})
	a := &b.acks[len(b.acks)-1]
	b.msgs = append(b.msgs, msg.Payload)
	// Publishers race to the lock, so deadlines arrive slightly out of order.
	if deadline.After(b.deadline) {
		b.deadline = deadline
	}
	if deadline.After(p.last) {
		p.last = deadline
	}
	p.queued++
	start := !p.flushing
	p.flushing = true
	p.mu.Unlock()
	if start {
		go p.deliverLoop()
	}
	return queue.NewFuture(a, queue.Token{}), nil
}

// Close implements queue.BatchPublisher. It waits until every message is
// delivered, or until the newest message's deadline has passed: by then
// every future has resolved (with ErrDeadline at worst).
func (p *publisher) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		if p.space != nil {
			close(p.space) // blocked publishers see closed
			p.space = nil
		}
		if !p.flushing {
			p.markDrained()
		}
	}
	last := p.last
	p.mu.Unlock()
	if last.IsZero() {
		<-p.drained
		return nil
	}
	t := time.NewTimer(time.Until(last))
	defer t.Stop()
	select {
	case <-p.drained:
	case <-t.C:
	}
	return nil
}

func (p *publisher) markDrained() {
	if !p.isDrain {
		p.isDrain = true
		close(p.drained)
	}
}

// deliverLoop hands queued batches to their listener, one at a time, until
// nothing is queued.
func (p *publisher) deliverLoop() {
	for {
		p.mu.Lock()
		var b *batch
		if len(p.ready) > 0 {
			b = p.ready[0]
			p.ready[0] = nil
			p.ready = p.ready[1:]
		} else {
			b, p.open = p.open, nil
		}
		if b == nil {
			p.flushing = false
			if p.closed {
				p.markDrained()
			}
			p.mu.Unlock()
			return
		}
		p.queued -= len(b.msgs)
		p.sizeHint = len(b.msgs)
		if p.space != nil {
			close(p.space)
			p.space = nil
		}
		p.mu.Unlock()
		p.bus.deliverBatch(b)
	}
}

// deliverBatch runs b through its listener and completes it.
func (q *Bus) deliverBatch(b *batch) {
	defer b.complete()
	if !q.enter() {
		b.err = fmt.Errorf("bus: topic %q: %w", b.topic, queue.ErrClosed)
		return
	}
	defer q.leave()
	ctx := context.Background()
	if !b.deadline.IsZero() {
		if !time.Now().Before(b.deadline) {
			b.err = fmt.Errorf("bus: topic %q: batch expired before delivery: %w", b.topic, queue.ErrDeadline)
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, b.deadline)
		defer cancel()
	}
	res, err := deliver(ctx, b.l, queue.Batch{Topic: b.topic, Messages: b.msgs, Local: true})
	if err != nil {
		b.err = err
		return
	}
	for i, err := range res.Errs {
		if err != nil {
			if b.errs == nil {
				b.errs = make([]error, len(b.msgs))
			}
			b.errs[i] = fmt.Errorf("bus: topic %q message %d: %w", b.topic, i, err)
		}
	}
}

func (b *batch) complete() {
	b.mu.Lock()
	b.completed = true
	b.completedAt = time.Now()
	b.mu.Unlock()
	close(b.done)
}

// Wait implements queue.Waiter. An outcome already known is returned even
// if ctx is done.
func (a *ack) Wait(ctx context.Context, _ queue.Token) error {
	select {
	case <-a.b.done:
		return a.result()
	default:
	}
	if a.deadline.IsZero() {
		select {
		case <-a.b.done:
			return a.result()
		case <-ctx.Done():
			return fmt.Errorf("bus: wait for ack: %w", ctx.Err())
		}
	}
	if wait := time.Until(a.deadline); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-a.b.done:
			return a.result()
		case <-ctx.Done():
			return fmt.Errorf("bus: wait for ack: %w", ctx.Err())
		case <-t.C:
		}
	}
	// The deadline has passed. If the batch is still running, any later
	// completion is after the deadline too, so result() will agree.
	a.b.mu.Lock()
	completed := a.b.completed
	a.b.mu.Unlock()
	if completed {
		return a.result()
	}
	return a.deadlineErr()
}

func (a *ack) result() error {
	b := a.b
	if !a.deadline.IsZero() && !b.completedAt.Before(a.deadline) {
		return a.deadlineErr()
	}
	if b.err != nil {
		return b.err
	}
	if b.errs != nil {
		return b.errs[a.idx]
	}
	return nil
}

func (a *ack) deadlineErr() error {
	return fmt.Errorf("bus: topic %q: not acked within the publisher's timeout: %w", a.b.topic, queue.ErrDeadline)
}
