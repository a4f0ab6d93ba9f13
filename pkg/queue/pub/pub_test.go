package pub_test

import (
	"context"
	"fmt"
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
			// A stream the stall timeout reopened (a loaded machine) lost
			// the acks of the batches in flight on it; their messages went
			// again in other batches.
			poll.Until(t, "the observer to have seen every batch and ack", func() bool {
				st := c.Stats()
				sent, msgs, acks := obs.counts()
				acksOK := acks == sent || (st.Reconnects > 0 && acks > 0 && acks < sent)
				return sent == st.BatchesSent && msgs == st.MessagesSent && acksOK && msgs >= 5000
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

// TestOnePublisherManyTopicsAndGroups: a publisher remembers the route of
// its last topic and group (see routeCache). One publisher that writes
// runs of 16 messages, switching topic every run and group every other
// run, across a change of the node set in the middle of a run, still puts
// each message in its own topic's listener on its own group and shard's
// primary, and nowhere else.
func TestOnePublisherManyTopicsAndGroups(t *testing.T) {
	topics := []queue.Topic{queue.TopicStreamWrite, queue.TopicMeasureWrite}
	groups := []route.Group{{Name: group, ShardNum: shardNum}, {Name: "h", ShardNum: 3}}
	recs := map[string]map[queue.Topic]*recorder{}
	var nodes []*testNode
	for _, name := range []string{"a", "b", "c"} {
		recs[name] = map[queue.Topic]*recorder{}
		listeners := map[queue.Topic]queue.Listener{}
		for _, tp := range topics {
			recs[name][tp] = newRecorder(false)
			listeners[tp] = recs[name][tp]
		}
		nodes = append(nodes, startNode(t, name, false, listeners))
	}
	r := route.NewRouter()
	place := func(ns ...*testNode) {
		rn := make([]route.Node, len(ns))
		for i, n := range ns {
			rn[i] = n.routeNode()
		}
		if _, err := r.Update(rn, groups); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, fastConfig(), r)
	p := c.NewBatchPublisher(waitMax)

	type placed struct {
		sent
		topic   queue.Topic
		primary string
	}
	var all []placed
	publish := func(phase string, n int) {
		for range n {
			i := len(all) // runs go on across phases
			m := placed{topic: topics[(i/16)%2]}
			g := groups[(i/32)%2]
			m.shard = uint32(i) % g.ShardNum
			m.payload = fmt.Sprintf("%s-%d", phase, i)
			ns, err := r.Current().Nodes(g.Name, m.shard)
			if err != nil {
				t.Fatal(err)
			}
			m.primary = ns[0].Name
			f, err := p.Publish(context.Background(), m.topic, queue.Message{Group: g.Name, Shard: m.shard, Payload: []byte(m.payload)})
			if err != nil {
				t.Fatalf("Publish %s: %v", m.payload, err)
			}
			m.f = f
			all = append(all, m)
		}
	}
	place(nodes[0], nodes[1])
	publish("two", 72)
	// A new table in the middle of a run (messages 64 to 79, group g,
	// every shard once from 72 on): the publisher's cached route is stale.
	place(nodes...)
	publish("three", 120)

	sents := make([]sent, len(all))
	for i, m := range all {
		sents[i] = m.sent
	}
	if _, failed := outcomes(t, sents); len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	moved := 0
	for _, m := range all {
		for name, byTopic := range recs {
			for tp, rec := range byTopic {
				want := name == m.primary && tp == m.topic
				if rec.has(m.payload) != want {
					t.Fatalf("%s (topic %s, primary %s): node %s topic %s has it: %v, want %v",
						m.payload, m.topic, m.primary, name, tp, !want, want)
				}
			}
		}
		if m.primary == "c" {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no message of the second phase was placed on the new node: the table change was not exercised")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
