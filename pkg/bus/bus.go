package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Errors callers can branch on. They are always returned wrapped, with the
// topic in the message; test for them with errors.Is.
var (
	// ErrClosed is returned by Publish, PublishFuture and Subscribe once
	// Close or Shutdown has been called.
	ErrClosed = errors.New("bus: closed")
	// ErrNoSubscriber is returned when a message is published to a topic
	// nobody listens to: the message would be lost silently otherwise.
	ErrNoSubscriber = errors.New("bus: no subscriber")
	// ErrMultipleListeners is returned by PublishFuture when the topic has
	// more than one listener: a request must have exactly one responder.
	ErrMultipleListeners = errors.New("bus: request topic has more than one listener")
	// ErrListenerPanic wraps a panic recovered from a listener. The panic
	// value is in the message and, if it is an error, in the chain too.
	ErrListenerPanic = errors.New("bus: listener panicked")
)

// Topic names a stream of messages, e.g. "stream-write".
type Topic string

// Message is one unit handed to listeners. ID is chosen by the publisher
// (the queue matches replies to requests by it); the bus only reports it in
// errors. Payload is passed by reference to every listener of the topic, so
// listeners must treat it as read-only.
type Message struct {
	ID      uint64
	Payload any
}

// Listener handles the messages of the topics it is subscribed to. Handle
// may be called concurrently, from the publisher's goroutine; it should
// return promptly once ctx is done. The reply is delivered to the publisher
// by PublishFuture and discarded by Publish.
type Listener interface {
	Handle(ctx context.Context, m Message) (reply any, err error)
}

// ListenerFunc adapts a function to the Listener interface.
type ListenerFunc func(ctx context.Context, m Message) (any, error)

// Handle calls f(ctx, m).
func (f ListenerFunc) Handle(ctx context.Context, m Message) (any, error) { return f(ctx, m) }

// Future is the pending reply to a message sent with PublishFuture.
type Future interface {
	// Get waits for the reply until ctx is done. Giving up on the wait does
	// not cancel the delivery; that is governed by the publisher's ctx.
	Get(ctx context.Context) (reply any, err error)
}

// table maps topics to their listeners. A published table is never
// modified: Subscribe builds a new one and swaps it in.
type table map[Topic][]Listener

// closedBit marks Bus.state once the bus is closed; the bits below it count
// deliveries in flight. Keeping both in one word lets Publish admit itself
// and check for closure in a single atomic add, with no lock.
const closedBit = int64(1) << 62

// Bus is an in-process publish/subscribe bus, safe for concurrent use.
//
// Delivery is synchronous: Publish calls every listener of the topic on the
// caller's goroutine, in subscription order, and returns when they all have.
// A slow listener therefore slows its publishers down; that is the only
// backpressure the bus applies. PublishFuture delivers on a new goroutine
// and returns at once.
//
// Close or Shutdown stop intake first, then wait for deliveries already
// admitted to return.
type Bus struct {
	// mu serializes Subscribe's copy-on-write; Publish never takes it and
	// reads the current table from tab instead.
	mu  sync.Mutex
	tab atomic.Pointer[table]

	// state counts deliveries in flight, with closedBit set once closed.
	state     atomic.Int64
	drainOnce sync.Once
	drained   chan struct{} // closed when closed and nothing is in flight
}

// New returns an empty, open Bus.
func New() *Bus {
	b := &Bus{drained: make(chan struct{})}
	b.tab.Store(&table{})
	return b
}

// Subscribe adds l to the listeners of topic. Every message published to
// topic after Subscribe returns is handed to l as well as to the listeners
// subscribed before it. There is no unsubscribe: listeners live as long as
// the bus.
func (b *Bus) Subscribe(topic Topic, l Listener) error {
	if topic == "" {
		return errors.New("bus: subscribe: empty topic")
	}
	if l == nil {
		return fmt.Errorf("bus: subscribe to %q: nil listener", topic)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load()&closedBit != 0 {
		return fmt.Errorf("bus: subscribe to %q: %w", topic, ErrClosed)
	}
	old := *b.tab.Load()
	next := make(table, len(old)+1)
	for t, ls := range old {
		next[t] = ls
	}
	// Full slice expression: appending must never write into the backing
	// array of a slice a concurrent Publish may be reading.
	ls := old[topic]
	next[topic] = append(ls[:len(ls):len(ls)], l)
	b.tab.Store(&next)
	return nil
}

// Publish hands each message, in order, to every listener of topic and
// returns when all deliveries are done. Replies are discarded. Errors from
// listeners, recovered listener panics (ErrListenerPanic) and an
// interruption by ctx are returned joined; a failing listener does not stop
// delivery to the others. Delivery stops early, without calling the
// remaining listeners, once ctx is done.
func (b *Bus) Publish(ctx context.Context, topic Topic, msgs ...Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bus: publish to %q: %w", topic, err)
	}
	if !b.enter() {
		return fmt.Errorf("bus: publish to %q: %w", topic, ErrClosed)
	}
	defer b.leave()
	ls, err := b.listeners(topic)
	if err != nil {
		return err
	}
	var errs []error
	total := len(msgs) * len(ls)
	for i, m := range msgs {
		for j, l := range ls {
			if err := ctx.Err(); err != nil {
				done := i*len(ls) + j
				errs = append(errs, fmt.Errorf("bus: publish to %q interrupted after %d of %d deliveries: %w",
					topic, done, total, err))
				return errors.Join(errs...)
			}
			if _, err := deliver(ctx, topic, j, l, m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// PublishFuture sends a request to the single listener of topic and returns
// a Future for its reply. The listener runs on a new goroutine with ctx, so
// cancelling ctx cancels the request itself; the Future's Get only bounds
// the wait. A topic with no listener gives ErrNoSubscriber, one with more
// than one gives ErrMultipleListeners: use Publish to fan out.
func (b *Bus) PublishFuture(ctx context.Context, topic Topic, m Message) (Future, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bus: publish to %q: %w", topic, err)
	}
	if !b.enter() {
		return nil, fmt.Errorf("bus: publish to %q: %w", topic, ErrClosed)
	}
	ls, err := b.listeners(topic)
	if err != nil {
		b.leave()
		return nil, err
	}
	if len(ls) != 1 {
		b.leave()
		return nil, fmt.Errorf("bus: publish to %q: %d listeners: %w", topic, len(ls), ErrMultipleListeners)
	}
	f := &future{done: make(chan struct{})}
	// The goroutine is counted in state (enter above), so Close waits for it
	// and it never outlives a closed bus unless Shutdown's deadline expires.
	go func() {
		defer b.leave()
		defer close(f.done)
		if err := ctx.Err(); err != nil {
			f.err = fmt.Errorf("bus: publish to %q: %w", topic, err)
			return
		}
		f.reply, f.err = deliver(ctx, topic, 0, ls[0], m)
	}()
	return f, nil
}

// Close stops the bus and waits, without limit, for deliveries in flight
// to return. Use Shutdown to bound the wait.
func (b *Bus) Close() {
	_ = b.Shutdown(context.Background())
}

// Shutdown stops the bus: from now on Publish, PublishFuture and Subscribe
// return ErrClosed. It then waits until the deliveries already admitted
// return, or until ctx is done; in the latter case it returns ctx's error
// with the number of deliveries still running, which are abandoned (the bus
// does not own their contexts and cannot cancel them). Shutdown may be
// called more than once.
func (b *Bus) Shutdown(ctx context.Context) error {
	if b.state.Or(closedBit) == 0 {
		b.markDrained()
	}
	select {
	case <-b.drained:
		return nil
	case <-ctx.Done():
		n := b.state.Load() &^ closedBit
		return fmt.Errorf("bus: shutdown with %d deliveries still running: %w", n, ctx.Err())
	}
}

// enter admits one delivery, or reports false if the bus is closed.
func (b *Bus) enter() bool {
	if b.state.Add(1)&closedBit != 0 {
		b.leave()
		return false
	}
	return true
}

// leave ends a delivery admitted by enter (or undoes a refused one).
func (b *Bus) leave() {
	if b.state.Add(-1) == closedBit {
		b.markDrained()
	}
}

func (b *Bus) markDrained() { b.drainOnce.Do(func() { close(b.drained) }) }

func (b *Bus) listeners(topic Topic) ([]Listener, error) {
	ls := (*b.tab.Load())[topic]
	if len(ls) == 0 {
		return nil, fmt.Errorf("bus: publish to %q: %w", topic, ErrNoSubscriber)
	}
	return ls, nil
}

// deliver calls l, turning a panic into an ErrListenerPanic error so a
// faulty listener fails its message instead of the whole process.
// idx is the listener's position on its topic, to tell listeners apart in
// errors.
func deliver(ctx context.Context, topic Topic, idx int, l Listener, m Message) (reply any, err error) {
	defer func() {
		if r := recover(); r != nil {
			reply = nil
			if perr, ok := r.(error); ok {
				err = fmt.Errorf("%w: topic %q message %d listener %d: %w", ErrListenerPanic, topic, m.ID, idx, perr)
			} else {
				err = fmt.Errorf("%w: topic %q message %d listener %d: %v", ErrListenerPanic, topic, m.ID, idx, r)
			}
		}
	}()
	reply, err = l.Handle(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("bus: topic %q message %d listener %d: %w", topic, m.ID, idx, err)
	}
	return reply, nil
}

type future struct {
	done  chan struct{}
	reply any // written before done is closed, read after
	err   error
}

func (f *future) Get(ctx context.Context) (any, error) {
	select {
	case <-f.done:
		return f.reply, f.err
	default:
	}
	select {
	case <-f.done:
		return f.reply, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("bus: wait for reply: %w", ctx.Err())
	}
}
