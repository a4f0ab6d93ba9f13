package pub_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
	"github.com/banyand-io/banyand/pkg/route"
)

const topic = queue.TopicStreamWrite

// sent is one published message and its future.
type sent struct {
	payload string
	shard   uint32
	f       queue.Future
}

// publishN publishes n messages spread over every shard.
func publishN(ctx context.Context, t *testing.T, p queue.BatchPublisher, prefix string, n int) []sent {
	t.Helper()
	out := make([]sent, 0, n)
	for i := range n {
		s := sent{payload: fmt.Sprintf("%s-%d", prefix, i), shard: uint32(i % shardNum)}
		f, err := p.Publish(ctx, topic, queue.Message{Group: group, Shard: s.shard, Payload: []byte(s.payload)})
		if err != nil {
			t.Fatalf("Publish %s: %v", s.payload, err)
		}
		s.f = f
		out = append(out, s)
	}
	return out
}

// outcomes resolves every future twice (a future resolves exactly once, so
// both answers must agree) and splits them into acked and failed.
func outcomes(t *testing.T, msgs []sent) (acked []sent, failed map[string]error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitMax)
	defer cancel()
	failed = map[string]error{}
	for _, m := range msgs {
		err := m.f.Get(ctx)
		if ctx.Err() != nil {
			t.Fatalf("future of %s never resolved: silently dropped", m.payload)
		}
		if again := m.f.Get(ctx); (err == nil) != (again == nil) {
			t.Fatalf("future of %s resolved twice differently: %v then %v", m.payload, err, again)
		}
		if err == nil {
			acked = append(acked, m)
		} else {
			failed[m.payload] = err
		}
	}
	return acked, failed
}

func nodeStats(c *pub.Client, name string) (pub.NodeStats, bool) {
	for _, ns := range c.Stats().Nodes {
		if ns.Name == name {
			return ns, true
		}
	}
	return pub.NodeStats{}, false
}

// TestAbruptStopLosesNothing: one of two nodes dies mid-stream (its
// connections are cut and its server stopped without grace). Every message
// is acked by some node or failed, never both, and nothing acked is missing
// from the listeners.
func TestAbruptStopLosesNothing(t *testing.T) {
	recA, recB := newRecorder(false), newRecorder(false)
	a := startNode(t, "a", true, map[queue.Topic]queue.Listener{topic: recA})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB})
	c := newClient(t, fastConfig(), newRouter(t, a, b))
	p := c.NewBatchPublisher(waitMax)
	ctx := context.Background()

	var (
		mu   sync.Mutex
		msgs []sent
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := sent{payload: fmt.Sprintf("g%d-%d", g, i), shard: uint32(i % shardNum)}
				f, err := p.Publish(ctx, topic, queue.Message{Group: group, Shard: s.shard, Payload: []byte(s.payload)})
				if err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
				s.f = f
				mu.Lock()
				msgs = append(msgs, s)
				mu.Unlock()
			}
		}()
	}
	poll.Until(t, "node a to persist messages", func() bool { d, _ := recA.count(); return d > 1000 })
	a.stop(t, 0)
	// Keep publishing through the failure and the retry budget.
	before := recB.countDistinct()
	poll.Until(t, "node b to take over", func() bool { return recB.countDistinct() > before+5000 })
	close(stop)
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	acked, failed := outcomes(t, msgs)
	for _, m := range acked {
		if !recA.has(m.payload) && !recB.has(m.payload) {
			t.Fatalf("%s acked but persisted by no node", m.payload)
		}
	}
	if len(acked)+len(failed) != len(msgs) {
		t.Fatalf("%d acked + %d failed != %d published", len(acked), len(failed), len(msgs))
	}
	// Node b stayed up and the deadline was generous: nothing needed to fail.
	for payload, err := range failed {
		t.Errorf("%s failed although node b was up: %v", payload, err)
	}
	if st := c.Stats(); st.Replaced == 0 {
		t.Errorf("Stats().Replaced = 0 after node a died with work in flight; stats %+v", st)
	}
	t.Logf("published %d, acked %d, failed %d, stats %+v", len(msgs), len(acked), len(failed), c.Stats())
}

func (r *recorder) countDistinct() int { d, _ := r.count(); return d }

// TestStuckNodeReplaced: a node whose connection stays open but stops
// answering (paused proxy) has its messages re-placed on the other node
// once the stall timeout and retry budget pass.
func TestStuckNodeReplaced(t *testing.T) {
	recA, recB := newRecorder(false), newRecorder(false)
	a := startNode(t, "a", true, map[queue.Topic]queue.Listener{topic: recA})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB})
	r := newRouter(t, a, b)
	c := newClient(t, fastConfig(), r)
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	ctx := context.Background()

	if acked, failed := outcomes(t, publishN(ctx, t, p, "warm", 4*shardNum)); len(failed) > 0 {
		t.Fatalf("warm-up: %d acked, failures %v", len(acked), failed)
	}
	a.proxy.Pause()
	msgs := publishN(ctx, t, p, "stuck", 2000)
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d of %d failed although node b was up, e.g. %v", len(failed), len(msgs), first(failed))
	}
	onA := 0
	for _, m := range acked {
		if primary(t, r, m.shard) == "a" {
			onA++
			if !recB.has(m.payload) {
				t.Fatalf("%s (primary a, which was stuck) acked but not persisted by b", m.payload)
			}
		}
	}
	if onA == 0 {
		t.Fatal("no shard is placed on node a: the test proves nothing")
	}
	if ns, _ := nodeStats(c, "a"); !ns.Down {
		t.Errorf("node a not marked down while stuck: %+v", ns)
	}
	if c.Stats().Replaced == 0 {
		t.Error("Stats().Replaced = 0")
	}

	// Once it answers again it is used again.
	a.proxy.Resume()
	poll.Until(t, "node a back up", func() bool { ns, _ := nodeStats(c, "a"); return !ns.Down })
	before := recA.countDistinct()
	if _, failed := outcomes(t, publishN(ctx, t, p, "back", 4*shardNum)); len(failed) > 0 {
		t.Fatalf("after recovery: %v", first(failed))
	}
	if recA.countDistinct() == before {
		t.Error("node a got nothing after it recovered")
	}
}

func primary(t *testing.T, r *route.Router, shard uint32) string {
	t.Helper()
	ns, err := r.Current().Nodes(group, shard)
	if err != nil {
		t.Fatal(err)
	}
	return ns[0].Name
}

func first(m map[string]error) string {
	for k, v := range m {
		return k + ": " + v.Error()
	}
	return ""
}

// TestSlowListenerBackpressure: a node that does not ack makes Publish
// block and then fail with ErrResourceExhausted; the client's memory stays
// within its bound throughout.
func TestSlowListenerBackpressure(t *testing.T) {
	rec := newRecorder(true)
	defer rec.release()
	n := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: rec})
	cfg := fastConfig()
	cfg.MaxBytesPerNode, cfg.MaxBatchBytes, cfg.PublishWait = 64<<10, 8<<10, 50*time.Millisecond
	c := newClient(t, cfg, newRouter(t, n))

	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if b := c.Stats().BytesInUse; b > peak.Load() {
				peak.Store(b)
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()

	p := c.NewBatchPublisher(waitMax)
	ctx := context.Background()
	payload := make([]byte, 1000)
	var futs []queue.Future
	var exhausted error
	for i := 0; i < 10000 && exhausted == nil; i++ {
		f, err := p.Publish(ctx, topic, queue.Message{Group: group, Shard: uint32(i % shardNum), Payload: payload})
		if err != nil {
			exhausted = err
			break
		}
		futs = append(futs, f)
	}
	if !errors.Is(exhausted, queue.ErrResourceExhausted) {
		t.Fatalf("publishing into a stuck node: %v, want ErrResourceExhausted", exhausted)
	}
	// The caller's ctx bounds the wait too.
	short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	_, err := p.Publish(short, topic, queue.Message{Group: group, Payload: payload})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, queue.ErrResourceExhausted) {
		t.Fatalf("Publish with a short ctx into a full node: %v", err)
	}

	rec.release()
	for i, f := range futs {
		if err := f.Get(ctx); err != nil {
			t.Fatalf("message %d accepted before the bound filled: %v", i, err)
		}
	}
	// Room again: publishing works.
	f, err := p.Publish(ctx, topic, queue.Message{Group: group, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Get(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	close(done)
	wg.Wait()
	if peak.Load() > cfg.MaxBytesPerNode {
		t.Fatalf("bytes in use peaked at %d, bound %d", peak.Load(), cfg.MaxBytesPerNode)
	}
	t.Logf("accepted %d messages before exhaustion; peak %d bytes of %d", len(futs), peak.Load(), cfg.MaxBytesPerNode)
}

// TestRemovedNodeWorkReplaced: a node leaves the placement table while it
// holds queued and in-flight messages (its listener is stuck); they are
// re-placed on the remaining node and its connection is closed.
func TestRemovedNodeWorkReplaced(t *testing.T) {
	recA, recB := newRecorder(true), newRecorder(false)
	defer recA.release()
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: recA})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB})
	r := newRouter(t, a, b)
	cfg := fastConfig()
	cfg.StallTimeout = time.Minute // only the removal may move the work
	c := newClient(t, cfg, r)
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()

	msgs := publishN(context.Background(), t, p, "m", 2000)
	poll.Until(t, "node a's listener to hold batches", func() bool { _, calls := recA.count(); return calls > 0 })
	setNodes(t, r, b)

	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	for _, m := range acked {
		if !recB.has(m.payload) {
			t.Fatalf("%s acked but not persisted by b (a never acked anything)", m.payload)
		}
	}
	poll.Until(t, "node a's connection to close", func() bool { _, ok := nodeStats(c, "a"); return !ok })
	if c.Stats().Replaced == 0 {
		t.Error("Stats().Replaced = 0")
	}
}

// TestCloseFailsWhatItCannotDeliver: Close waits until its ctx, then fails
// every unacked message with ErrClosed; later publishes fail with ErrClosed.
func TestCloseFailsWhatItCannotDeliver(t *testing.T) {
	rec := newRecorder(true)
	defer rec.release()
	n := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: rec})
	c := newClient(t, fastConfig(), newRouter(t, n))
	p := c.NewBatchPublisher(waitMax)
	msgs := publishN(context.Background(), t, p, "m", 100)
	poll.Until(t, "listener to hold a batch", func() bool { _, calls := rec.count(); return calls > 0 })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Close(ctx); err == nil {
		t.Fatal("Close with unacked messages and an expired ctx returned nil")
	}
	_, failed := outcomes(t, msgs)
	if len(failed) != len(msgs) {
		t.Fatalf("%d of %d failed, want all", len(failed), len(msgs))
	}
	for payload, err := range failed {
		if !errors.Is(err, queue.ErrClosed) {
			t.Fatalf("%s: %v, want ErrClosed", payload, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p2 := c.NewBatchPublisher(time.Second)
	if _, err := p2.Publish(context.Background(), topic, queue.Message{Group: group}); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Publish after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Broadcast(context.Background(), topic, group, nil); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("Broadcast after Close: %v, want ErrClosed", err)
	}
}

// refuser is a data node speaking another protocol version.
type refuser struct {
	clusterv1.UnimplementedQueueServiceServer
	streams atomic.Int64
}

func (r *refuser) Stream(clusterv1.QueueService_StreamServer) error {
	r.streams.Add(1)
	return status.Error(codes.FailedPrecondition, "incompatible protocol: subscriber speaks version 2 only")
}

// TestIncompatibleNodeRoutedAround: a node refusing our version gets no
// messages and is not retried; its shards go to the next node at once
// (without waiting for the retry budget).
func TestIncompatibleNodeRoutedAround(t *testing.T) {
	rec := newRecorder(false)
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: rec})
	ref := &refuser{}
	gs := grpc.NewServer()
	clusterv1.RegisterQueueServiceServer(gs, ref)
	old := startRaw(t, gs)
	r := route.NewRouter()
	if _, err := r.Update([]route.Node{{Name: "old", Addr: old}, b.routeNode()},
		[]route.Group{{Name: group, ShardNum: shardNum}}); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.RetryBudget = time.Hour
	c := newClient(t, cfg, r)
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	if _, failed := outcomes(t, publishN(context.Background(), t, p, "m", 500)); len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	if ns, _ := nodeStats(c, "old"); !ns.Down {
		t.Fatalf("incompatible node not marked down: %+v", ns)
	}
	if k := ref.streams.Load(); k > int64(pub.DefaultStreamsPerNode)+1 { // and the request stream
		t.Fatalf("incompatible node was retried: %d streams opened", k)
	}
}

// TestNodesVanishForAMoment: the table loses every data node and gets them
// back soon after, as when etcd drops the nodes' leases while it is paused
// and they re-register. A publish made meanwhile waits and is acked; once
// the table has been empty for RetryBudget, publishes fail with ErrNoNodes
// instead of waiting.
func TestNodesVanishForAMoment(t *testing.T) {
	rec := newRecorder(false)
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: rec})
	r := newRouter(t, a)
	cfg := fastConfig()
	cfg.RetryBudget = 2 * time.Second // the grace: longer than the blip below takes
	c := newClient(t, cfg, r)
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	ctx := context.Background()
	if f, err := p.Publish(ctx, topic, queue.Message{Group: group, Payload: []byte("before")}); err != nil || f.Get(ctx) != nil {
		t.Fatalf("publish before the blip: %v", err)
	}

	setNodes(t, r) // every node gone
	type result struct {
		f   queue.Future
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := p.Publish(ctx, topic, queue.Message{Group: group, Payload: []byte("during")})
		done <- result{f, err}
	}()
	poll.Until(t, "the publish to wait for a node", func() bool { return c.Stats().AwaitingNodes == 1 })
	setNodes(t, r, a) // back
	res := <-done
	if res.err != nil {
		t.Fatalf("publish during the blip: %v (want it to wait for the node)", res.err)
	}
	if err := res.f.Get(ctx); err != nil {
		t.Fatalf("message published during the blip: %v", err)
	}
	if !rec.has("during") {
		t.Fatal("acked but not persisted")
	}

	// A longer outage: after RetryBudget without nodes, publishing fails.
	cfg.RetryBudget = 100 * time.Millisecond
	c2 := newClient(t, cfg, r)
	p2 := c2.NewBatchPublisher(waitMax)
	defer p2.Close()
	setNodes(t, r)
	_, err := p2.Publish(ctx, topic, queue.Message{Group: group, Payload: []byte("outage")})
	if !errors.Is(err, queue.ErrNoNodes) {
		t.Fatalf("publish with no node for longer than RetryBudget: %v, want ErrNoNodes", err)
	}
	if _, err := p2.Publish(ctx, topic, queue.Message{Group: group, Payload: []byte("outage-2")}); !errors.Is(err, queue.ErrNoNodes) {
		t.Fatalf("second publish in the outage: %v, want ErrNoNodes", err)
	}
	if got := c2.Stats().AwaitingNodes; got != 0 {
		t.Errorf("AwaitingNodes = %d after the publishes returned", got)
	}
}

// TestQueuedWorkWaitsForNodes: messages queued on a node when the table
// loses every node are kept for the next node instead of failing, and the
// ones in flight there follow after RetryBudget.
func TestQueuedWorkWaitsForNodes(t *testing.T) {
	recA, recB := newRecorder(true), newRecorder(false)
	defer recA.release()
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: recA})
	r := newRouter(t, a)
	cfg := fastConfig()
	cfg.RetryBudget = 2 * time.Second
	cfg.StallTimeout = time.Minute // only the removal may move the work
	cfg.MaxBatchMessages = 10      // 8 batches of 10 in flight, the rest queued
	c := newClient(t, cfg, r)
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()

	msgs := publishN(context.Background(), t, p, "q", 300)
	poll.Until(t, "node a's listener to hold batches", func() bool { _, calls := recA.count(); return calls > 0 })
	setNodes(t, r)
	poll.Until(t, "the queued messages to wait for a node", func() bool { return c.Stats().WaitingMessages > 0 })
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB})
	setNodes(t, r, b)

	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d of %d failed, e.g. %s", len(failed), len(msgs), first(failed))
	}
	for _, m := range acked {
		if !recB.has(m.payload) {
			t.Fatalf("%s acked but not persisted by b (a never acked anything)", m.payload)
		}
	}
	poll.Until(t, "the waiting gauge to drop", func() bool { return c.Stats().WaitingMessages == 0 })
}
