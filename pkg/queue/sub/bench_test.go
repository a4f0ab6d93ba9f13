package sub_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/sub"
)

// BenchmarkServer measures messages per second through the subscriber
// over loopback: a raw client keeps a window of batches of ~300-byte
// messages in flight on one stream and a no-op listener counts them. Both
// ends share the machine's cores, as they would not in production.
func BenchmarkServer(b *testing.B) {
	for _, size := range []int{100, 1000} {
		for _, window := range []int{4, 8} {
			b.Run(fmt.Sprintf("batch=%d/window=%d", size, window), func(b *testing.B) {
				benchServer(b, size, window)
			})
		}
	}
}

func benchServer(b *testing.B, size, window int) {
	var got atomic.Int64
	count := queue.ListenerFunc(func(_ context.Context, bt queue.Batch) queue.Result {
		got.Add(int64(len(bt.Messages)))
		return queue.Result{}
	})
	ts := startServer(b, sub.Config{ListenerWorkers: window}, map[queue.Topic]queue.Listener{topic: count})
	r := openStream(b, dial(b, ts.addr, nil))
	r.handshake()

	msgs := make([][]byte, size)
	for i := range msgs {
		msgs[i] = make([]byte, 300)
	}
	batches := b.N/size + 1
	credit := make(chan struct{}, window)
	for range window {
		credit <- struct{}{}
	}
	acked := make(chan error, 1)
	go func() {
		for range batches {
			resp, err := r.s.Recv()
			if err != nil {
				acked <- err
				return
			}
			if a := resp.GetAck(); a == nil || a.GetBatchFailure() != nil {
				acked <- fmt.Errorf("bad ack %v", resp)
				return
			}
			credit <- struct{}{}
		}
		acked <- nil
	}()

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	deadline := time.Now().Add(time.Hour).UnixNano()
	for i := range batches {
		<-credit
		if err := r.s.Send(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Batch{Batch: &clusterv1.Batch{
			BatchId: uint64(i + 1), Topic: string(topic), Messages: msgs, DeadlineUnixNano: deadline,
		}}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-acked; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if n := got.Load(); n != int64(batches*size) {
		b.Fatalf("listener saw %d messages, want %d", n, batches*size)
	}
	b.ReportMetric(float64(batches*size)/elapsed.Seconds(), "msgs/s")
}
