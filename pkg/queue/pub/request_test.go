package pub_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
)

// Queries travel on a stream of their own: slow queries, answered long
// after the stall timeout, neither hold back writes (a window slot, the
// wait of small batches behind one in flight) nor get their stream
// reopened; every query is answered once its listener lets it go.
func TestSlowRequestsDoNotHoldWritesBack(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int64
	slow := queue.ListenerFunc(func(ctx context.Context, b queue.Batch) queue.Result {
		started.Add(int64(len(b.Messages)))
		select {
		case <-release:
		case <-ctx.Done():
		}
		res := queue.Result{Replies: make([][]byte, len(b.Messages))}
		for i, m := range b.Messages {
			res.Replies[i] = append([]byte("answer:"), m...)
		}
		return res
	})
	rec := newRecorder(false)
	n := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: rec, queue.TopicStreamQuery: slow})
	cfg := fastConfig() // stall timeout 200 ms
	cfg.MaxInFlightBatches = 2
	cfg.MaxBatchMessages = 1 // a query a batch
	c := newClient(t, cfg, newRouter(t, n))

	const queries = 4 // twice the window
	answers := make(chan error, queries)
	for range queries {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitMax)
			defer cancel()
			replies, err := c.Broadcast(ctx, queue.TopicStreamQuery, group, []byte("q"))
			if err == nil && (len(replies) != 1 || replies[0].Err != nil || string(replies[0].Payload) != "answer:q") {
				err = replies[0].Err
				if err == nil {
					t.Errorf("reply %q", replies[0].Payload)
				}
			}
			answers <- err
		}()
	}
	// A slow query at the listener, the others queued behind it (a small
	// batch waits while another is in flight: see sendq.Queue.Take).
	poll.Until(t, "a slow query at the listener", func() bool { return started.Load() >= 1 })

	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	acked, failed := outcomes(t, publishN(context.Background(), t, p, "w", 500))
	if len(failed) > 0 || len(acked) != 500 {
		t.Fatalf("writes while queries were slow: %d acked, %d failed (e.g. %v)", len(acked), len(failed), first(failed))
	}
	time.Sleep(3 * cfg.StallTimeout) // past the stall timeout with the queries unanswered
	close(release)
	for range queries {
		if err := <-answers; err != nil {
			t.Fatalf("slow query: %v", err)
		}
	}
	if got := started.Load(); got != queries {
		t.Fatalf("%d queries reached the listener, want %d", got, queries)
	}
	if st := c.Stats(); st.Reconnects != 0 {
		t.Fatalf("%d streams reopened: a slow query counted as a stalled stream", st.Reconnects)
	}
}
