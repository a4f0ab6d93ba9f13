package pub_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/queue/sub"
	"github.com/banyand-io/banyand/pkg/route"
)

// startRaw serves gs on 127.0.0.1:0 until the test ends.
func startRaw(t testing.TB, gs *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
	})
	return lis.Addr().String()
}

// countingObserver counts what a pub.Observer is told.
type countingObserver struct {
	mu              sync.Mutex
	batches, msgs   int64
	acks            int64
	negativeLatency bool
}

func (o *countingObserver) BatchSent(_ string, msgs int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches++
	o.msgs += int64(msgs)
}

func (o *countingObserver) BatchAcked(_ string, latency time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acks++
	o.negativeLatency = o.negativeLatency || latency < 0
}

func (o *countingObserver) counts() (batches, msgs, acks int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.negativeLatency {
		return -1, -1, -1
	}
	return o.batches, o.msgs, o.acks
}

// TestSpreadsOverNodes: messages reach the primary of their shard, every
// future succeeds, and a clean Close returns nil.
func TestSpreadsOverNodes(t *testing.T) {
	for _, streams := range []int{1, 3} {
		t.Run("streams="+string(rune('0'+streams)), func(t *testing.T) {
			recA, recB := newRecorder(false), newRecorder(false)
			a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: recA})
			b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB})
			r := newRouter(t, a, b)
			cfg := fastConfig()
			cfg.StreamsPerNode = streams
			obs := &countingObserver{}
			c := pub.New(cfg, pub.Deps{Placement: r, Observer: obs})
			p := c.NewBatchPublisher(waitMax)
			acked, failed := outcomes(t, publishN(context.Background(), t, p, "m", 5000))
			if len(failed) > 0 {
				t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
			}
			recs := map[string]*recorder{"a": recA, "b": recB}
			for _, m := range acked {
				if !recs[primary(t, r, m.shard)].has(m.payload) {
					t.Fatalf("%s not persisted by its primary %s", m.payload, primary(t, r, m.shard))
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if st.MessagesSent < 5000 || st.BatchesSent == 0 || st.BytesInUse != 0 {
				t.Fatalf("stats after all acked: %+v", st)
			}
			// Every batch sent was observed with its size, and every ack.
			// The send loop counts a batch after Send returns, which may be
			// after its ack settled the futures: poll.
			poll.Until(t, "the observer to have seen every batch and ack", func() bool {
				st := c.Stats()
				sent, msgs, acks := obs.counts()
				return sent == st.BatchesSent && msgs == st.MessagesSent && acks == sent && msgs >= 5000
			})
			ctx, cancel := context.WithTimeout(context.Background(), waitMax)
			defer cancel()
			if err := c.Close(ctx); err != nil {
				t.Fatalf("Close with everything acked: %v", err)
			}
		})
	}
}

// TestBroadcastEveryNode: a broadcast reaches each node holding the group
// once and returns each node's reply.
func TestBroadcastEveryNode(t *testing.T) {
	answer := func(name string) queue.Listener {
		return queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
			res := queue.Result{Replies: make([][]byte, len(b.Messages))}
			for i, m := range b.Messages {
				res.Replies[i] = append([]byte(name+":"), m...)
			}
			return res
		})
	}
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{queue.TopicStreamQuery: answer("a")})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{queue.TopicStreamQuery: answer("b")})
	c := newClient(t, fastConfig(), newRouter(t, a, b))
	ctx, cancel := context.WithTimeout(context.Background(), waitMax)
	defer cancel()
	replies, err := c.Broadcast(ctx, queue.TopicStreamQuery, group, []byte("q"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range replies {
		if r.Err != nil {
			t.Fatalf("node %s: %v", r.Node, r.Err)
		}
		got = append(got, r.Node+"="+string(r.Payload))
	}
	slices.Sort(got)
	if want := []string{"a=a:q", "b=b:q"}; !slices.Equal(got, want) {
		t.Fatalf("replies %v, want %v", got, want)
	}

	// A dead node answers with an error in its reply; the other still answers.
	a.stop(t, 0)
	short, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	replies, err = c.Broadcast(short, queue.TopicStreamQuery, group, []byte("q"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range replies {
		switch {
		case r.Node == "a" && r.Err == nil:
			t.Fatalf("dead node a replied %q", r.Payload)
		case r.Node == "b" && (r.Err != nil || string(r.Payload) != "b:q"):
			t.Fatalf("node b: %q, %v", r.Payload, r.Err)
		}
	}
}

// TestTooLargeSplits: a node accepting smaller batches than the publisher
// builds answers CODE_TOO_LARGE; the publisher resends in smaller batches
// and every message succeeds.
func TestTooLargeSplits(t *testing.T) {
	rec := newRecorder(false)
	srv := sub.New(sub.Config{NodeName: "small", MaxBatchMessages: 7}, nil)
	if err := srv.Subscribe(topic, rec); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitMax)
		defer cancel()
		_ = srv.Stop(ctx)
		<-served
	}()
	r := route.NewRouter()
	if _, err := r.Update([]route.Node{{Name: "small", Addr: lis.Addr().String()}},
		[]route.Group{{Name: group, ShardNum: shardNum}}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, fastConfig(), r)
	p := c.NewBatchPublisher(waitMax)
	msgs := publishN(context.Background(), t, p, "m", 500)
	if _, failed := outcomes(t, msgs); len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	for _, m := range msgs {
		if !rec.has(m.payload) {
			t.Fatalf("%s acked but not persisted", m.payload)
		}
	}
	p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitMax)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
