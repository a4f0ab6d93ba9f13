package test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/registry/etcd/etcdtest"

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

// A client opens more write streams than the liaison admits and keeps them
// open: the ones beyond --max-streams are refused with RESOURCE_EXHAUSTED,
// the admitted ones keep working, memory grows with the streams, not
// without bound, and a stream is admitted again once one closes.
func TestClusterClientWithTooManyStreams(t *testing.T) {
	const limit = 300
	c := &cluster{t: t, etcd: etcdtest.Start(t)}
	c.dataDirs = append(c.dataDirs, t.TempDir())
	c.data = append(c.data, c.startDataNode(0))
	c.waitRegistered(1)
	l := newLiaison(c.etcd.Endpoint())
	l.SetMaxStreams(limit)
	runClientRole(t, "liaison", l)
	h := &hostileEnv{conn: dial(t, l.ClientAddr())}
	createStreamSchema(t, h.conn, 2)
	healthy(t, h)
	before := heapInUse()

	greedy := dial(t, h.conn.Target())
	client := streamv1.NewStreamServiceClient(greedy)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// open starts a stream and writes one element on it: an admitted
	// stream answers SUCCEED, a refused one ends with the stream's error.
	open := func(i int) (grpc.BidiStreamingClient[streamv1.WriteRequest, streamv1.WriteResponse], error) {
		ws, err := client.Write(ctx)
		if err != nil {
			return nil, err
		}
		if err := ws.Send(&streamv1.WriteRequest{Metadata: streamMD, MessageId: uint64(i + 1), Element: testElement(2_000_000+i, 7)}); err != nil {
			_, err = ws.Recv()
			return nil, err
		}
		resp, err := ws.Recv()
		if err != nil {
			return nil, err
		}
		if resp.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("stream %d: write answered %s", i, resp.GetStatus())
		}
		return ws, nil
	}
	// healthy's own write uses one stream at a time on another
	// connection, so the greedy client may hold limit-1.
	streams := make([]grpc.BidiStreamingClient[streamv1.WriteRequest, streamv1.WriteResponse], 0, limit)
	for i := range limit - 1 {
		ws, err := open(i)
		if err != nil {
			t.Fatalf("stream %d of %d: %v", i, limit, err)
		}
		streams = append(streams, ws)
	}
	growth := heapInUse() - before
	t.Logf("%d idle write streams: heap grew by %d KiB (%d KiB a stream)", len(streams), growth>>10, growth/int64(len(streams))>>10)
	if growth > int64(len(streams))*tooManyStreamsHeapPerStream {
		t.Errorf("heap grew by %d bytes for %d idle streams, bound %d a stream", growth, len(streams), tooManyStreamsHeapPerStream)
	}
	if _, err := open(limit); err != nil {
		t.Fatalf("the last stream within the limit: %v", err)
	}
	for i := range 20 {
		if _, err := open(limit + 1 + i); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("stream beyond the limit: %v, want RESOURCE_EXHAUSTED", err)
		}
	}
	// An admitted stream still takes writes.
	if err := streams[0].Send(&streamv1.WriteRequest{Metadata: streamMD, MessageId: 99, Element: testElement(3_000_000, 7)}); err != nil {
		t.Fatal(err)
	}
	if resp, err := streams[0].Recv(); err != nil || resp.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
		t.Fatalf("write on an admitted stream: %v, %v", resp, err)
	}
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	poll.Within(t, 10*time.Second, "a stream admitted once the greedy client's closed", func() bool {
		ws, err := open(4_000_000)
		if err == nil {
			_ = ws.CloseSend()
		}
		return err == nil
	})
	healthy(t, h)
}

// tooManyStreamsHeapPerStream bounds the heap an idle write stream costs
// the whole process (client, liaison, data node).
const tooManyStreamsHeapPerStream = 64 << 10
