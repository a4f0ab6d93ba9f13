package pub_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/internal/cputime"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
)

// Both benchmarks publish benchMsgBytes-byte messages to one real sub
// server over loopback, whose listener accepts everything at once, so the
// difference between them is the publisher's own cost.
const (
	benchMsgBytes = 300
	benchWindow   = 8192 // futures a benchmark goroutine keeps outstanding
)

func benchNode(b testing.TB) (*testNode, *atomic.Int64) {
	var got atomic.Int64
	n := startNode(b, "bench", false, map[queue.Topic]queue.Listener{
		topic: queue.ListenerFunc(func(_ context.Context, bt queue.Batch) queue.Result {
			got.Add(int64(len(bt.Messages)))
			return queue.Result{}
		}),
	})
	return n, &got
}

// BenchmarkPublish: one publisher — one goroutine calling Publish on one
// BatchPublisher, as the baseline has one goroutine building batches —
// through the full client: routing, futures, batching, pipelining, acks.
// This is the pair the target compares.
func BenchmarkPublish(b *testing.B) { benchPublish(b, false) }

// BenchmarkPublishParallel: GOMAXPROCS publishers sharing the client, as
// the liaison's client write streams do.
func BenchmarkPublishParallel(b *testing.B) { benchPublish(b, true) }

// publishLoop publishes until next says stop, keeping benchWindow futures
// outstanding, then waits for the rest.
func publishLoop(b *testing.B, c *pub.Client, sh uint32, payload []byte, next func() bool) {
	ctx := context.Background()
	p := c.NewBatchPublisher(time.Minute)
	defer p.Close()
	ring := make([]queue.Future, benchWindow)
	i := 0
	for next() {
		slot := &ring[i%benchWindow]
		if !slot.IsZero() {
			if err := slot.Get(ctx); err != nil {
				b.Error(err)
				return
			}
		}
		f, err := p.Publish(ctx, topic, queue.Message{Group: group, Shard: sh, Payload: payload})
		if err != nil {
			b.Error(err)
			return
		}
		*slot = f
		i++
	}
	for _, f := range ring {
		if !f.IsZero() {
			if err := f.Get(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	}
}

func benchPublish(b *testing.B, parallel bool) {
	n, got := benchNode(b)
	c := newClient(b, pub.Config{NodeName: "bench"}, newRouter(b, n))
	payload := make([]byte, benchMsgBytes)
	ctx := context.Background()
	// Warm up: connect before the clock starts.
	p := c.NewBatchPublisher(time.Minute)
	f, err := p.Publish(ctx, topic, queue.Message{Group: group, Payload: payload})
	if err != nil || f.Get(ctx) != nil {
		b.Fatal(err)
	}
	p.Close()
	before := c.Stats()
	var shard atomic.Uint32
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cputime.Of(b)
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			publishLoop(b, c, shard.Add(1)%shardNum, payload, pb.Next)
		})
	} else {
		left := b.N
		publishLoop(b, c, 0, payload, func() bool { left--; return left >= 0 })
	}
	elapsed, cpu := time.Since(start), cputime.Of(b)-cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/msg")
	after := c.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	if batches := after.BatchesSent - before.BatchesSent; batches > 0 {
		b.ReportMetric(float64(after.MessagesSent-before.MessagesSent)/float64(batches), "msgs/batch")
	}
	if got.Load() < int64(b.N) {
		b.Fatalf("listener got %d of %d", got.Load(), b.N)
	}
}

// BenchmarkBaselineRawGRPC: the ceiling for the same transport, with the
// least bookkeeping a correct batched, pipelined client does: each message
// is appended to the open batch as it comes (a client gets messages one at
// a time), batches of pub.DefaultMaxBatchMessages go out on one raw
// QueueService stream with the same window of 8 in flight, and each stays
// in flight (to be resent if its stream broke) until its ack is matched to
// it by id. No routing, no futures, no deadlines, no memory bound.
func BenchmarkBaselineRawGRPC(b *testing.B) {
	n, got := benchNode(b)
	conn, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(8<<20), grpc.WithInitialConnWindowSize(16<<20),
		grpc.WithWriteBufferSize(512<<10), grpc.WithReadBufferSize(256<<10))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := clusterv1.NewQueueServiceClient(conn).Stream(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Send(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Hello{
		Hello: &clusterv1.Hello{ProtocolVersion: 1, NodeName: "baseline"}}}); err != nil {
		b.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		b.Fatal(err)
	}
	const size, window = pub.DefaultMaxBatchMessages, pub.DefaultMaxInFlightBatches
	payload := make([]byte, benchMsgBytes)
	type rawBatch struct {
		id   uint64
		msgs [][]byte
	}
	batches := (b.N + size - 1) / size
	slots := make(chan struct{}, window)
	free := make(chan *rawBatch, window+1) // recycled batches
	for range window + 1 {
		free <- &rawBatch{msgs: make([][]byte, 0, size)}
	}
	var mu sync.Mutex
	var inFlight []*rawBatch // oldest first
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the receive loop: matches each ack to its batch
		defer wg.Done()
		for range batches {
			resp, err := st.Recv()
			ack := resp.GetAck()
			if err != nil || ack == nil || ack.GetBatchFailure() != nil || len(ack.GetFailures()) > 0 {
				b.Errorf("ack: %v %v", resp, err)
				return
			}
			mu.Lock()
			i := slices.IndexFunc(inFlight, func(rb *rawBatch) bool { return rb.id == ack.GetBatchId() })
			if i < 0 {
				mu.Unlock()
				b.Errorf("ack for batch %d, not in flight", ack.GetBatchId())
				return
			}
			rb := inFlight[i]
			inFlight = slices.Delete(inFlight, i, i+1)
			mu.Unlock()
			clear(rb.msgs)
			rb.msgs = rb.msgs[:0]
			free <- rb
			<-slots
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cputime.Of(b)
	left := b.N
	req := &clusterv1.StreamRequest{}
	for id := range batches {
		k := min(size, left)
		left -= k
		rb := <-free
		rb.id = uint64(id + 1)
		for range k {
			rb.msgs = append(rb.msgs, payload)
		}
		slots <- struct{}{}
		mu.Lock()
		inFlight = append(inFlight, rb)
		mu.Unlock()
		req.Frame = &clusterv1.StreamRequest_Batch{Batch: &clusterv1.Batch{
			BatchId: rb.id, Topic: string(topic), Messages: rb.msgs,
		}}
		if err := st.Send(req); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cputime.Of(b)-cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/msg")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(size, "msgs/batch")
	_ = st.CloseSend()
	if got.Load() < int64(b.N) {
		b.Fatalf("listener got %d of %d", got.Load(), b.N)
	}
}
