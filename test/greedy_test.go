package test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// The never-reading client's load: more than the liaison's pending bound
// (8192 messages a stream) plus the gRPC windows can hold, so a liaison
// without flow control would take them all.
const (
	greedyWrites  = 30000
	greedyPayload = 1024
	// greedyHeapMax bounds the heap growth of the process (liaison, data
	// node and clients) while the client is stuck.
	greedyHeapMax = 64 << 20
)

// A client writes without ever reading its answers. The liaison stops
// reading from it (gRPC flow control) instead of buffering without bound,
// memory stays bounded, and another client is served meanwhile.
func TestClusterClientThatNeverReads(t *testing.T) {
	c := startCluster(t, 1, 1)
	h := &hostileEnv{conn: c.liaisons[0]}
	createStreamSchema(t, h.conn, 2)
	healthy(t, h)
	before := heapInUse()

	// Its own connection: flow control is per stream and connection.
	greedy := dial(t, h.conn.Target())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ws, err := streamv1.NewStreamServiceClient(greedy).Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range greedyWrites {
			el := testElement(1_000_000+i, 7)
			el.TagFamilies[1].Tags[0] = &modelv1.TagValue{Value: &modelv1.TagValue_BinaryData{BinaryData: make([]byte, greedyPayload)}}
			if ws.Send(&streamv1.WriteRequest{Metadata: streamMD, MessageId: uint64(i + 1), Element: el}) != nil {
				return
			}
			sent.Add(1)
		}
	}()

	// Wait until the sender is blocked: no progress for a second.
	deadline := time.Now().Add(60 * time.Second)
	last, since := int64(-1), time.Now()
	for time.Since(since) < time.Second {
		if n := sent.Load(); n != last {
			last, since = n, time.Now()
		}
		if n := sent.Load(); n == greedyWrites || time.Now().After(deadline) {
			t.Fatalf("the liaison took %d of %d writes from a client that reads nothing: not flow-controlled", n, greedyWrites)
		}
		time.Sleep(50 * time.Millisecond)
	}
	healthy(t, h)
	growth := heapInUse() - before
	t.Logf("the liaison took %d of %d writes of %d bytes before the never-reading client was blocked; heap grew by %d MiB",
		last, greedyWrites, greedyPayload, growth>>20)
	if growth > greedyHeapMax {
		t.Errorf("heap grew by %d bytes with a client stuck, bound %d", growth, greedyHeapMax)
	}
	cancel()
	<-done
	healthy(t, h)
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
