package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/banyand-io/banyand/pkg/bus"
)

// LocalConfig configures a Local queue. Zero values take the defaults.
type LocalConfig struct {
	// NodeName is reported as Reply.Node by Broadcast. Default "standalone".
	NodeName string
	// MaxBatch is the most messages a publisher hands to a listener in one
	// Batch. Default 1024.
	MaxBatch int
	// MaxPending is how many messages one publisher queues, undelivered,
	// before Publish blocks. Default 8192.
	MaxPending int
}

// Validate reports a config that cannot work.
func (c LocalConfig) Validate() error {
	if c.MaxBatch < 0 || c.MaxPending < 0 {
		return fmt.Errorf("queue: local config: negative MaxBatch (%d) or MaxPending (%d)", c.MaxBatch, c.MaxPending)
	}
	return nil
}

func (c LocalConfig) withDefaults() LocalConfig {
	if c.NodeName == "" {
		c.NodeName = "standalone"
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 1024
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 8192
	}
	if c.MaxPending < c.MaxBatch {
		c.MaxPending = c.MaxBatch
	}
	return c
}

// Local is the in-process Queue of standalone mode: publishers and
// listeners share a process and are joined by a pkg/bus Bus.
//
// A publisher coalesces: Publish only queues the message; one delivery
// goroutine per publisher (running only while it has work) hands whatever is
// queued, up to MaxBatch messages of one topic, to the topic's listener as one
// Batch, waits for it to return and starts again. Under light load batches are
// small; under heavy load they grow while the listener works, so a listener
// that commits once per batch amortizes its sync. Payloads are handed to the
// listener as they are, without copying: do not modify them after Publish.
type Local struct {
	cfg    LocalConfig
	bus    *bus.Bus
	seq    atomic.Uint64
	closed atomic.Bool

	mu     sync.Mutex // guards topics
	topics map[Topic]bool
}

var _ Queue = (*Local)(nil)

// NewLocal returns an open local queue.
func NewLocal(cfg LocalConfig) *Local {
	return &Local{cfg: cfg.withDefaults(), bus: bus.New(), topics: make(map[Topic]bool)}
}

// Subscribe registers l as the listener of topic. l may be called
// concurrently, by different publishers.
func (q *Local) Subscribe(topic Topic, l Listener) error {
	if topic == "" || l == nil {
		return fmt.Errorf("queue: subscribe to %q: empty topic or nil listener", topic)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() {
		return fmt.Errorf("queue: subscribe to %q: %w", topic, ErrClosed)
	}
	if q.topics[topic] {
		return fmt.Errorf("queue: subscribe to %q: topic already has a listener", topic)
	}
	if err := q.bus.Subscribe(bus.Topic(topic), busListener{l}); err != nil {
		return fmt.Errorf("queue: subscribe to %q: %w", topic, err)
	}
	q.topics[topic] = true
	return nil
}

// NewBatchPublisher returns a publisher whose messages fail with ErrDeadline
// unless their listener returns within timeout of Publish; timeout <= 0 means
// no deadline.
func (q *Local) NewBatchPublisher(timeout time.Duration) BatchPublisher {
	return &localPublisher{q: q, timeout: timeout, drained: make(chan struct{})}
}

// Broadcast hands payload to the topic's listener and returns its answer as
// the only Reply. A failure of the listener (including ErrUnknownTopic) is in
// Reply.Err; the error is ErrClosed or ctx's.
func (q *Local) Broadcast(ctx context.Context, topic Topic, _ string, payload []byte) ([]Reply, error) {
	if q.closed.Load() {
		return nil, fmt.Errorf("queue: broadcast to %q: %w", topic, ErrClosed)
	}
	c := &call{batch: Batch{Topic: topic, Messages: [][]byte{payload}}}
	err := q.bus.Publish(ctx, bus.Topic(topic), bus.Message{ID: q.seq.Add(1), Payload: c})
	if err != nil {
		err = mapBusError(topic, err)
		if errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return nil, err
		}
		return []Reply{{Node: q.cfg.NodeName, Err: err}}, nil
	}
	r := Reply{Node: q.cfg.NodeName}
	if err := c.check(); err != nil {
		r.Err = err
	} else {
		if c.res.Errs != nil && c.res.Errs[0] != nil {
			r.Err = fmt.Errorf("queue: broadcast to %q: %w", topic, c.res.Errs[0])
		}
		if c.res.Replies != nil {
			r.Payload = c.res.Replies[0]
		}
	}
	return []Reply{r}, nil
}

// Stop refuses new messages and subscriptions with ErrClosed and waits for
// deliveries in flight to return, until ctx is done. Close publishers first:
// messages they still hold fail with ErrClosed.
func (q *Local) Stop(ctx context.Context) error {
	q.mu.Lock()
	q.closed.Store(true)
	q.mu.Unlock()
	if err := q.bus.Shutdown(ctx); err != nil {
		return fmt.Errorf("queue: stop local queue: %w", err)
	}
	return nil
}

// call carries a batch to a listener through the bus and its result back.
type call struct {
	batch Batch
	res   Result
}

// check reports a Result whose shape does not match its batch.
func (c *call) check() error {
	n := len(c.batch.Messages)
	if c.res.Errs != nil && len(c.res.Errs) != n {
		return fmt.Errorf("queue: topic %q: listener returned %d errors for %d messages", c.batch.Topic, len(c.res.Errs), n)
	}
	if c.res.Replies != nil && len(c.res.Replies) != n {
		return fmt.Errorf("queue: topic %q: listener returned %d replies for %d messages", c.batch.Topic, len(c.res.Replies), n)
	}
	return nil
}

// busListener adapts a queue Listener to the bus: the bus message carries a
// *call, the listener's Result is stored back into it.
type busListener struct{ l Listener }

func (b busListener) Handle(ctx context.Context, m bus.Message) (any, error) {
	c := m.Payload.(*call)
	c.res = b.l.Handle(ctx, c.batch)
	return nil, nil
}

// mapBusError turns a bus error into the queue's sentinels.
func mapBusError(topic Topic, err error) error {
	switch {
	case errors.Is(err, bus.ErrNoSubscriber):
		return fmt.Errorf("queue: topic %q: %w", topic, ErrUnknownTopic)
	case errors.Is(err, bus.ErrClosed):
		return fmt.Errorf("queue: topic %q: %w", topic, ErrClosed)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("queue: topic %q: %w", topic, ErrDeadline)
	default:
		return fmt.Errorf("queue: topic %q: listener failed: %w", topic, err)
	}
}
