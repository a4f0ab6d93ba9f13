package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// Config configures a Bus. Zero values take the defaults.
type Config struct {
	// NodeName is reported as Reply.Node by Broadcast. Default "standalone".
	NodeName string
	// MaxBatch is the most messages a publisher hands to a listener in one
	// Batch. Default 1024.
	MaxBatch int
	// MaxPending is how many messages one publisher queues, undelivered,
	// before Publish blocks. Default 8192, and never below MaxBatch.
	MaxPending int
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	if c.MaxBatch < 0 || c.MaxPending < 0 {
		return fmt.Errorf("bus: config: negative MaxBatch (%d) or MaxPending (%d)", c.MaxBatch, c.MaxPending)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.NodeName == "" {
		c.NodeName = "standalone"
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 1024
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 8192
	}
	c.MaxPending = max(c.MaxPending, c.MaxBatch)
	return c
}

// listeners maps each topic to its one listener. A published map is never
// modified: Subscribe builds a new one and swaps it in.
type listeners map[queue.Topic]queue.Listener

// closedBit marks Bus.state once the bus is stopped; the bits below it count
// deliveries in flight. Keeping both in one word lets a delivery admit
// itself and check for closure in a single atomic add, with no lock.
const closedBit = int64(1) << 62

// Bus is the in-process queue.Queue, safe for concurrent use.
//
// Backpressure: each publisher (NewBatchPublisher) holds at most MaxPending
// messages not yet handed to a listener; Publish blocks while that many
// wait, until the publisher's delivery goroutine takes a batch or the
// caller's ctx is done, and then returns ErrResourceExhausted. A listener
// runs on its publisher's delivery goroutine, so a slow listener slows only
// the publishers whose batches it holds; listeners of one topic are called
// concurrently by different publishers.
//
// Stop refuses new work first, then waits, until its ctx is done, for the
// batches already in listeners to return.
type Bus struct {
	cfg Config

	// mu serializes Subscribe's copy-on-write; deliveries never take it and
	// read the current map from tab instead.
	mu  sync.Mutex
	tab atomic.Pointer[listeners]

	// state counts deliveries in flight, with closedBit set once stopped.
	state     atomic.Int64
	drainOnce sync.Once
	drained   chan struct{} // closed when stopped and nothing is in flight
}

var _ queue.Queue = (*Bus)(nil)

// New returns an open bus with no listener.
func New(cfg Config) *Bus {
	b := &Bus{cfg: cfg.withDefaults(), drained: make(chan struct{})}
	b.tab.Store(&listeners{})
	return b
}

// Subscribe registers l as the listener of topic, one listener per topic.
// Messages published to topic before Subscribe fail with ErrUnknownTopic.
func (b *Bus) Subscribe(topic queue.Topic, l queue.Listener) error {
	if topic == "" || l == nil {
		return fmt.Errorf("bus: subscribe to %q: empty topic or nil listener", topic)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed() {
		return fmt.Errorf("bus: subscribe to %q: %w", topic, queue.ErrClosed)
	}
	old := *b.tab.Load()
	if old[topic] != nil {
		return fmt.Errorf("bus: subscribe to %q: topic already has a listener", topic)
	}
	next := make(listeners, len(old)+1)
	for t, l := range old {
		next[t] = l
	}
	next[topic] = l
	b.tab.Store(&next)
	return nil
}

// NewBatchPublisher returns a publisher whose messages fail with
// ErrDeadline unless their listener returns within timeout of Publish;
// timeout <= 0 means no deadline.
func (b *Bus) NewBatchPublisher(timeout time.Duration) queue.BatchPublisher {
	return &publisher{bus: b, timeout: timeout, drained: make(chan struct{})}
}

// Broadcast hands payload to the topic's listener, on the caller's
// goroutine, and returns its answer as the only Reply. A failure of the
// listener (ErrUnknownTopic included) is in Reply.Err; the error is
// ErrClosed or ctx's.
func (b *Bus) Broadcast(ctx context.Context, topic queue.Topic, _ string, payload []byte) ([]queue.Reply, error) {
	return b.Ask(ctx, topic, "", func(string) []byte { return payload })
}

// Ask implements queue.Asker: Broadcast with payload(NodeName).
func (b *Bus) Ask(ctx context.Context, topic queue.Topic, _ string, payload func(node string) []byte) ([]queue.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bus: broadcast to %q: %w", topic, err)
	}
	if !b.enter() {
		return nil, fmt.Errorf("bus: broadcast to %q: %w", topic, queue.ErrClosed)
	}
	defer b.leave()
	r := queue.Reply{Node: b.cfg.NodeName}
	l, err := b.listener(topic)
	if err != nil {
		r.Err = err
		return []queue.Reply{r}, nil
	}
	res, err := deliver(ctx, l, queue.Batch{Topic: topic, Messages: [][]byte{payload(b.cfg.NodeName)}, Local: true})
	switch {
	case err != nil:
		r.Err = err
	case res.Errs != nil && res.Errs[0] != nil:
		r.Err = fmt.Errorf("bus: broadcast to %q: %w", topic, res.Errs[0])
	}
	if err == nil && res.Replies != nil {
		r.Payload = res.Replies[0]
	}
	return []queue.Reply{r}, nil
}

// Stop refuses new messages, broadcasts and subscriptions with ErrClosed,
// then waits until the batches already in listeners return, or until ctx is
// done; in the latter case it returns ctx's error with the number of
// deliveries still running, which are abandoned. Close publishers first:
// messages they still hold fail with ErrClosed. Stop may be called more than
// once.
func (b *Bus) Stop(ctx context.Context) error {
	b.mu.Lock() // a Subscribe in progress finishes first
	if b.state.Or(closedBit) == 0 {
		b.markDrained()
	}
	b.mu.Unlock()
	select {
	case <-b.drained:
		return nil
	case <-ctx.Done():
		n := b.state.Load() &^ closedBit
		return fmt.Errorf("bus: stop with %d deliveries still running: %w", n, ctx.Err())
	}
}

func (b *Bus) closed() bool { return b.state.Load()&closedBit != 0 }

// enter admits one delivery, or reports false if the bus is stopped.
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

func (b *Bus) listener(topic queue.Topic) (queue.Listener, error) {
	if l := (*b.tab.Load())[topic]; l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("bus: topic %q: %w", topic, queue.ErrUnknownTopic)
}

// errListenerPanic wraps a panic recovered from a listener.
var errListenerPanic = errors.New("bus: listener panicked")

// deliver calls l with batch and checks the shape of its Result. A panic
// becomes an error, so a faulty listener fails its batch instead of the
// process.
func deliver(ctx context.Context, l queue.Listener, batch queue.Batch) (res queue.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res = queue.Result{}
			err = fmt.Errorf("%w: topic %q: %v", errListenerPanic, batch.Topic, r)
		}
	}()
	res = l.Handle(ctx, batch)
	n := len(batch.Messages)
	if res.Errs != nil && len(res.Errs) != n {
		return queue.Result{}, fmt.Errorf("bus: topic %q: listener returned %d errors for %d messages", batch.Topic, len(res.Errs), n)
	}
	if res.Replies != nil && len(res.Replies) != n {
		return queue.Result{}, fmt.Errorf("bus: topic %q: listener returned %d replies for %d messages", batch.Topic, len(res.Replies), n)
	}
	return res, nil
}
