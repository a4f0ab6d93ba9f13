package roles

import (
	"context"
	"time"

	"github.com/banyand-io/banyand/pkg/queue"
)

// delayWrites makes every write batch of listeners wait delay before it is
// handled: the --debug-listener-delay fault-injection knob, which turns a
// data node into a slow one (docs/design/faults.md). Query topics are not
// delayed. The wait ends early, with ctx's error for every message, when
// the batch's ctx ends.
func delayWrites(listeners map[queue.Topic]queue.Listener, delay time.Duration) map[queue.Topic]queue.Listener {
	if delay <= 0 {
		return listeners
	}
	out := make(map[queue.Topic]queue.Listener, len(listeners))
	for topic, l := range listeners {
		if topic != queue.TopicStreamWrite && topic != queue.TopicMeasureWrite && topic != queue.TopicPropertyWrite && topic != queue.TopicTraceWrite {
			out[topic] = l
			continue
		}
		out[topic] = queue.ListenerFunc(func(ctx context.Context, b queue.Batch) queue.Result {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
				return l.Handle(ctx, b)
			case <-ctx.Done():
				errs := make([]error, len(b.Messages))
				for i := range errs {
					errs[i] = ctx.Err()
				}
				return queue.Result{Errs: errs}
			}
		})
	}
	return out
}
