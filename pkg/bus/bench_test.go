package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/bus"
	"github.com/banyand-io/banyand/pkg/queue"
)

// BenchmarkPublish measures end-to-end writes through the bus: publishers
// (one per client stream) publish ~300-byte messages and wait for every
// ack, as the liaison does. sync is the listener's cost per batch, like one
// synced commit.
func BenchmarkPublish(b *testing.B) {
	payload := make([]byte, 300)
	for _, sync := range []time.Duration{0, 500 * time.Microsecond} {
		for _, publishers := range []int{1, 4} {
			b.Run(fmt.Sprintf("sync=%v/publishers=%d", sync, publishers), func(b *testing.B) {
				benchPublish(b, publishers, sync, payload)
			})
		}
	}
}

func benchPublish(b *testing.B, publishers int, syncCost time.Duration, payload []byte) {
	q := bus.New(bus.Config{})
	defer q.Stop(context.Background())
	if err := q.Subscribe("t", queue.ListenerFunc(func(context.Context, queue.Batch) queue.Result {
		if syncCost > 0 {
			time.Sleep(syncCost) // the listener's work, not a wait for a condition
		}
		return queue.Result{}
	})); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := b.N/publishers + 1
	for range publishers {
		wg.Go(func() {
			p := q.NewBatchPublisher(time.Minute)
			defer p.Close()
			// Keep a window of unacked messages, as a client write stream does.
			const window = 4096
			futs := make([]queue.Future, 0, window)
			for range per {
				f, err := p.Publish(ctx, "t", queue.Message{Payload: payload})
				if err != nil {
					b.Error(err)
					return
				}
				futs = append(futs, f)
				if len(futs) == window {
					for _, f := range futs {
						if err := f.Get(ctx); err != nil {
							b.Error(err)
							return
						}
					}
					futs = futs[:0]
				}
			}
			for _, f := range futs {
				if err := f.Get(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(per*publishers)/time.Since(start).Seconds(), "msgs/s")
}
