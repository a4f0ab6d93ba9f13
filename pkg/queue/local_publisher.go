package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/banyand-io/banyand/pkg/bus"
)

// localPublisher is Local's BatchPublisher.
//
// Backpressure: Publish blocks while MaxPending messages are queued and not
// yet handed to a listener, until the delivery goroutine takes some or ctx is
// done (then ErrResourceExhausted).
type localPublisher struct {
	q       *Local
	timeout time.Duration

	// mu guards everything below. Publish appends to open; the delivery
	// goroutine takes ready batches first, then open.
	mu       sync.Mutex
	ready    []*localBatch // full batches, oldest first
	open     *localBatch   // batch still taking messages
	queued   int           // messages in ready and open
	space    chan struct{} // closed when queued drops; nil if nobody waits
	flushing bool          // a delivery goroutine is running
	closed   bool
	last     time.Time     // deadline of the newest message
	drained  chan struct{} // closed once closed and nothing is left to deliver
	isDrain  bool          // drained is closed
}

// localBatch is a batch being formed or delivered. Its futures share one
// done channel and read their outcome from it once done is closed.
type localBatch struct {
	topic    Topic
	msgs     [][]byte
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

// Publish implements BatchPublisher.
func (p *localPublisher) Publish(ctx context.Context, topic Topic, msg Message) (Future, error) {
	if p.q.closed.Load() {
		return Future{}, fmt.Errorf("queue: publish to %q: %w", topic, ErrClosed)
	}
	var deadline time.Time
	if p.timeout > 0 {
		deadline = time.Now().Add(p.timeout)
	}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return Future{}, fmt.Errorf("queue: publish to %q: publisher %w", topic, ErrClosed)
		}
		if p.queued < p.q.cfg.MaxPending {
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
			return Future{}, fmt.Errorf("queue: publish to %q: %d messages queued: %w (%w)",
				topic, p.q.cfg.MaxPending, ErrResourceExhausted, ctx.Err())
		}
		p.mu.Lock()
	}
	b := p.open
	if b == nil || b.topic != topic || len(b.msgs) >= p.q.cfg.MaxBatch {
		if b != nil {
			p.ready = append(p.ready, b)
		}
		b = &localBatch{topic: topic, done: make(chan struct{})}
		p.open = b
	}
	f := &localFuture{b: b, idx: len(b.msgs), deadline: deadline}
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
	return NewFuture(f, nil), nil
}

// Close implements BatchPublisher. It waits until every message is
// delivered, or until the newest message's deadline has passed: by then
// every future has resolved (with ErrDeadline at worst).
func (p *localPublisher) Close() error {
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

func (p *localPublisher) markDrained() {
	if !p.isDrain {
		p.isDrain = true
		close(p.drained)
	}
}

// deliverLoop hands queued batches to their listener, one at a time, until
// nothing is queued.
func (p *localPublisher) deliverLoop() {
	for {
		p.mu.Lock()
		var b *localBatch
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
		if p.space != nil {
			close(p.space)
			p.space = nil
		}
		p.mu.Unlock()
		p.q.deliver(b)
	}
}

// deliver runs b through its listener and completes it.
func (q *Local) deliver(b *localBatch) {
	defer b.complete()
	ctx := context.Background()
	if !b.deadline.IsZero() {
		if !time.Now().Before(b.deadline) {
			b.err = fmt.Errorf("queue: topic %q: batch expired before delivery: %w", b.topic, ErrDeadline)
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, b.deadline)
		defer cancel()
	}
	c := &call{batch: Batch{Topic: b.topic, Messages: b.msgs}}
	if err := q.bus.Publish(ctx, bus.Topic(b.topic), bus.Message{ID: q.seq.Add(1), Payload: c}); err != nil {
		b.err = mapBusError(b.topic, err)
		return
	}
	if err := c.check(); err != nil {
		b.err = err
		return
	}
	if c.res.Errs == nil {
		return
	}
	for i, err := range c.res.Errs {
		if err != nil {
			if b.errs == nil {
				b.errs = make([]error, len(b.msgs))
			}
			b.errs[i] = fmt.Errorf("queue: topic %q message %d: %w", b.topic, i, err)
		}
	}
}

func (b *localBatch) complete() {
	b.mu.Lock()
	b.completed = true
	b.completedAt = time.Now()
	b.mu.Unlock()
	close(b.done)
}

// localFuture is one message of a localBatch.
type localFuture struct {
	b        *localBatch
	idx      int
	deadline time.Time
}

// Wait implements Waiter. An outcome already known is returned even if
// ctx is done.
func (f *localFuture) Wait(ctx context.Context, _ any) error {
	select {
	case <-f.b.done:
		return f.result()
	default:
	}
	if f.deadline.IsZero() {
		select {
		case <-f.b.done:
			return f.result()
		case <-ctx.Done():
			return fmt.Errorf("queue: wait for ack: %w", ctx.Err())
		}
	}
	if wait := time.Until(f.deadline); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-f.b.done:
			return f.result()
		case <-ctx.Done():
			return fmt.Errorf("queue: wait for ack: %w", ctx.Err())
		case <-t.C:
		}
	}
	// The deadline has passed. If the batch is still running, any later
	// completion is after the deadline too, so result() will agree.
	f.b.mu.Lock()
	completed := f.b.completed
	f.b.mu.Unlock()
	if completed {
		return f.result()
	}
	return f.deadlineErr()
}

func (f *localFuture) result() error {
	b := f.b
	if !f.deadline.IsZero() && !b.completedAt.Before(f.deadline) {
		return f.deadlineErr()
	}
	if b.err != nil {
		return b.err
	}
	if b.errs != nil {
		return b.errs[f.idx]
	}
	return nil
}

func (f *localFuture) deadlineErr() error {
	return fmt.Errorf("queue: topic %q: not acked within the publisher's timeout: %w", f.b.topic, ErrDeadline)
}
