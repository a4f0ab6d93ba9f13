package sendq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
)

// The orders Msg.result must get right, played step by step on one
// message and outcome; the publisher's TestRecycledMessagesKeepTheirFutures
// drives the same through the whole client, where the steps interleave at
// random.
func TestFutureOutcomeOrders(t *testing.T) {
	refused := errors.New("refused")
	get := func(m *Msg, o *outcome) error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		return m.future(o).Get(ctx)
	}

	t.Run("acked outcome, message reused and failed", func(t *testing.T) {
		m, o := new(Msg), new(outcome)
		o.acked.Store(true)
		// Recycled for a new message, which then fails on its own.
		if !m.Settle(refused, nil) {
			t.Fatal("settle of the reused message refused")
		}
		if err := get(m, o); err != nil {
			t.Fatalf("future of the acked message says %v", err)
		}
		if err := get(m, nil); !errors.Is(err, refused) {
			t.Fatalf("future of the new message says %v, want its failure", err)
		}
	})

	t.Run("settled on its own, outcome never acked", func(t *testing.T) {
		m, o := new(Msg), new(outcome)
		m.Settle(refused, nil)
		if err := get(m, o); !errors.Is(err, refused) {
			t.Fatalf("future says %v, want the message's failure", err)
		}
	})

	t.Run("neither yet, then the outcome", func(t *testing.T) {
		m, o := new(Msg), new(outcome)
		if err := get(m, o); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("future of an unsettled message says %v, want to wait until ctx", err)
		}
		done := make(chan error, 1)
		go func() { done <- m.future(o).Get(context.Background()) }()
		// A waiter parked on the outcome wakes when a batch ack closes it.
		b := &Batch{out: o}
		poll.Until(t, "the waiter to wait on the outcome", func() bool { return o.wait.Load() != nil })
		b.ack()
		if err := <-done; err != nil {
			t.Fatalf("waiter woken by the ack says %v", err)
		}
	})
}
