package pub_test

import (
	"context"
	"fmt"
	"slices"
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
	publish(3) // behind a big batch in flight: goes at once
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
	if got, want := rec.got(), []int{1, 16, 3}; !slices.Equal(got, want) {
		t.Fatalf("batch sizes %v, want %v", got, want)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
