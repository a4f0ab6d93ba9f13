package pub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
)

// sizeRecorder is a listener that records the size of each batch in
// arrival order and holds every batch until the gate is closed (the
// subscriber runs several batches of a stream at once).
type sizeRecorder struct {
	mu    sync.Mutex
	sizes []int
	gate  chan struct{}
}

func (r *sizeRecorder) Handle(ctx context.Context, b queue.Batch) queue.Result {
	r.mu.Lock()
	r.sizes = append(r.sizes, len(b.Messages))
	r.mu.Unlock()
	select {
	case <-r.gate:
	case <-ctx.Done():
		return queue.Result{Errs: fill(len(b.Messages), ctx.Err())}
	}
	return queue.Result{}
}

func (r *sizeRecorder) got() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sizes)
}

// While a small batch is in flight, the next small batch waits, growing,
// instead of going at once: it goes when it reaches a quarter of the batch
// cap, or when the ack frees the stream. A lone message on an idle stream
// goes at once, and behind a big batch in flight nothing waits.
func TestSmallBatchesWaitWhileOneIsInFlight(t *testing.T) {
	rec := &sizeRecorder{gate: make(chan struct{})}
	n := startNode(t, "n1", false, map[queue.Topic]queue.Listener{topic: rec})
	cfg := fastConfig()
	cfg.StallTimeout = time.Minute // the first batch is held on purpose
	cfg.MaxBatchMessages = 64      // a batch waits under 16 messages
	c := newClient(t, cfg, newRouter(t, n))
	ctx := context.Background()
	p := c.NewBatchPublisher(time.Minute)
	var futures []queue.Future
	publish := func(k int) {
		t.Helper()
		for range k {
			f, err := p.Publish(ctx, topic, queue.Message{Group: group, Payload: fmt.Appendf(nil, "m-%d", len(futures))})
			if err != nil {
				t.Fatal(err)
			}
			futures = append(futures, f)
		}
	}

	publish(1) // idle stream: goes at once, and the listener holds it
	poll.Until(t, "the first batch at the listener", func() bool { return len(rec.got()) == 1 })

	publish(10) // under the quarter: held
	poll.Until(t, "the send loop to hold the small batch", func() bool { return c.Stats().BatchesHeld >= 1 })
	if got := rec.got(); len(got) != 1 {
		t.Fatalf("batches at the listener while the first is in flight: %v, want the first only", got)
	}

	publish(6) // 16 messages now: goes although the first is still in flight, and is held too
	poll.Until(t, "the grown batch at the listener", func() bool { return len(rec.got()) == 2 })
	held := c.Stats().BatchesHeld
	// Behind a big batch in flight: goes at once. One message, so that
	// the send loop cannot take part of it and hold the rest behind that
	// small part.
	publish(1)
	poll.Until(t, "the batch behind the big one at the listener", func() bool { return len(rec.got()) == 3 })
	if got := c.Stats().BatchesHeld; got != held {
		t.Fatalf("held %d times behind a big batch in flight, want no more than the %d before", got, held)
	}
	close(rec.gate)
	for i, f := range futures {
		if err := f.Get(ctx); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if got, want := rec.got(), []int{1, 16, 1}; !slices.Equal(got, want) {
		t.Fatalf("batch sizes %v, want %v", got, want)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// tokenGate is a listener that records each batch's payloads and holds
// it until a token comes (or the channel is closed), refusing the
// messages that start with "bad" (as refusePrefixed does).
type tokenGate struct {
	mu      sync.Mutex
	batches [][]string
	tokens  chan struct{}
}

func (g *tokenGate) Handle(ctx context.Context, b queue.Batch) queue.Result {
	payloads := make([]string, len(b.Messages))
	for i, m := range b.Messages {
		payloads[i] = string(m)
	}
	g.mu.Lock()
	g.batches = append(g.batches, payloads)
	g.mu.Unlock()
	select {
	case <-g.tokens:
	case <-ctx.Done():
		return queue.Result{Errs: fill(len(b.Messages), ctx.Err())}
	}
	return refusePrefixed.Handle(ctx, b)
}

func (g *tokenGate) got() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.batches)
}

// Publishers queue in lanes of their own, and the send loop takes one
// lane's batch at a time. The small batches several publishers queue
// while a small batch is in flight go in one frame once its ack comes,
// not one lane per round trip; each message's future still says what
// became of that message, whether the frame is acked whole (each lane's
// batch settled by its outcome) or message by message (refusals).
func TestLanesHeldBehindASmallBatchGoInOneFrame(t *testing.T) {
	t.Run("acked whole", func(t *testing.T) { testLanesInOneFrame(t, "") })
	t.Run("with refusals", func(t *testing.T) { testLanesInOneFrame(t, "bad-") })
}

func testLanesInOneFrame(t *testing.T, bad string) {
	g := &tokenGate{tokens: make(chan struct{})}
	n := startNode(t, "n1", false, map[queue.Topic]queue.Listener{topic: g})
	cfg := fastConfig()
	cfg.StallTimeout = time.Minute // the first batch is held on purpose
	c := newClient(t, cfg, newRouter(t, n))
	ctx := context.Background()
	p1, p2 := c.NewBatchPublisher(time.Minute), c.NewBatchPublisher(time.Minute)
	futures := map[string]queue.Future{}
	publish := func(p queue.BatchPublisher, payloads ...string) {
		t.Helper()
		for _, s := range payloads {
			f, err := p.Publish(ctx, topic, queue.Message{Group: group, Payload: []byte(s)})
			if err != nil {
				t.Fatal(err)
			}
			futures[s] = f
		}
	}

	publish(p1, "a0") // idle stream: goes at once, and the listener holds it
	poll.Until(t, "the first batch at the listener", func() bool { return len(g.got()) == 1 })
	lane1, lane2 := []string{"a1", "a2", bad + "a3"}, []string{"b0", bad + "b1", "b2", "b3"}
	publish(p1, lane1...)
	publish(p2, lane2...)
	poll.Until(t, "the send loop to hold the small batches", func() bool { return c.Stats().BatchesHeld >= 1 })
	if got := g.got(); len(got) != 1 {
		t.Fatalf("batches at the listener while the first is in flight: %v, want the first only", got)
	}

	g.tokens <- struct{}{} // ack the first batch
	poll.Until(t, "the held batches at the listener", func() bool { return len(g.got()) >= 2 })
	close(g.tokens)
	getCtx, cancel := context.WithTimeout(ctx, waitMax)
	defer cancel()
	for s, f := range futures {
		err := f.Get(getCtx)
		if refused := bad != "" && strings.HasPrefix(s, bad); refused != errors.Is(err, queue.ErrInvalidMessage) || !refused && err != nil {
			t.Errorf("message %s: future says %v", s, err)
		}
	}
	got := g.got()
	if len(got) != 2 {
		t.Fatalf("batches %v, want the first and one frame with both lanes' messages", got)
	}
	// Both lanes' messages, each publisher's in its order.
	for _, order := range [][]string{lane1, lane2} {
		if kept := slices.DeleteFunc(slices.Clone(got[1]), func(s string) bool { return !slices.Contains(order, s) }); !slices.Equal(kept, order) {
			t.Errorf("second frame %v has %v as %v", got[1], order, kept)
		}
	}
	if len(got[1]) != len(lane1)+len(lane2) {
		t.Errorf("second frame %v, want %v and %v", got[1], lane1, lane2)
	}
	// Close returns once every future of its publisher is settled: the
	// outcome of a lane's batch that went in another's frame counts too.
	for _, p := range []queue.BatchPublisher{p1, p2} {
		closed := make(chan error, 1)
		go func() { closed <- p.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(waitMax):
			t.Fatal("Close still waits for messages whose futures are settled")
		}
	}
}
