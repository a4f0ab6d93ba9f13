package pub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// refusePrefixed acks every message except those starting with "bad",
// which fail on their own in the ack.
var refusePrefixed = queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
	var errs []error
	for i, m := range b.Messages {
		if bytes.HasPrefix(m, []byte("bad")) {
			if errs == nil {
				errs = make([]error, len(b.Messages))
			}
			errs[i] = fmt.Errorf("refused %s: %w", m, queue.ErrInvalidMessage)
		}
	}
	return queue.Result{Errs: errs}
})

// published is one message and what its future must say.
type published struct {
	f   queue.Future
	bad bool
	id  string
}

func (p published) check(ctx context.Context) error {
	err := p.f.Get(ctx)
	switch {
	case p.bad && !errors.Is(err, queue.ErrInvalidMessage):
		return fmt.Errorf("refused message %s: future says %w, want ErrInvalidMessage", p.id, err)
	case !p.bad && err != nil:
		return fmt.Errorf("acked message %s: future says %w", p.id, err)
	}
	return nil
}

// TestRecycledMessagesKeepTheirFutures: the client reuses the messages of
// batches acked whole for new messages. Futures handed out for them must
// keep their answer, asked while their message is reused (by waiters
// racing the reuse) and long after, and so must the futures of refused
// messages, whose memory a reused message may sit next to.
func TestRecycledMessagesKeepTheirFutures(t *testing.T) {
	n := startNode(t, "n1", false, map[queue.Topic]queue.Listener{topic: refusePrefixed})
	cfg := fastConfig()
	cfg.MaxBatchMessages = 8 // many small batches: many recycled lists
	c := newClient(t, cfg, newRouter(t, n))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const publishers, perPublisher = 2, 6000
	all := make([][]published, publishers)
	asked := make(chan published, 256) // futures for the racing waiters
	errc := make(chan error, publishers+2)
	var waiters sync.WaitGroup
	for range 2 {
		waiters.Go(func() {
			for p := range asked {
				if err := p.check(ctx); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	var pubs sync.WaitGroup
	for g := range publishers {
		pubs.Go(func() {
			bp := c.NewBatchPublisher(30 * time.Second)
			defer bp.Close()
			for i := range perPublisher {
				p := published{bad: i%97 == 13, id: fmt.Sprintf("%d-%d", g, i)}
				payload := "ok-" + p.id
				if p.bad {
					payload = "bad-" + p.id
				}
				f, err := bp.Publish(ctx, topic, queue.Message{Group: group, Payload: []byte(payload)})
				if err != nil {
					errc <- err
					return
				}
				p.f = f
				all[g] = append(all[g], p)
				if i%3 == 0 {
					select {
					case asked <- p:
					default:
					}
				}
				// An old future, whose message has most likely been
				// reused by now.
				if i >= 500 && i%50 == 0 {
					if err := all[g][i-500].check(ctx); err != nil {
						errc <- err
						return
					}
				}
			}
		})
	}
	pubs.Wait()
	close(asked)
	waiters.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for _, ps := range all {
		for _, p := range ps {
			if err := p.check(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Not vacuous: messages were recycled, and many times over the
	// spare lists' bound, so reused messages carried later messages.
	if got := c.Stats().MessagesRecycled; got < perPublisher {
		t.Fatalf("%d messages recycled of %d published; want most", got, publishers*perPublisher)
	}
}
