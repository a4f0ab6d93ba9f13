package pub_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
)

// fillNode publishes to one of node's shards until its budget is full
// (Publish fails with ErrResourceExhausted) and returns what it queued.
func fillNode(t *testing.T, c *pub.Client, timeout time.Duration, shard uint32, node string, payload []byte) []sent {
	t.Helper()
	p := c.NewBatchPublisher(timeout)
	var out []sent
	for i := 0; ; i++ {
		s := sent{payload: fmt.Sprintf("%s-%d", node, i), shard: shard}
		f, err := p.Publish(context.Background(), topic, queue.Message{Group: group, Shard: shard, Payload: append([]byte(s.payload), payload...)})
		if errors.Is(err, queue.ErrResourceExhausted) {
			return out
		}
		if err != nil {
			t.Errorf("publish to %s: %v", node, err)
			return out
		}
		s.f = f
		out = append(out, s)
	}
}

// TestReplacementBurstStaysWithinBound: two nodes leave the table with
// their budgets full while the third, which takes their work, is stuck
// with its own budget full. The messages re-placed onto it fill it to
// twice its budget at most (re-placed messages may go over the budget
// new ones wait for, by as much again); the rest wait to be re-placed.
// Every message still ends: acked once the node answers, or failed at
// its deadline if it never does.
func TestReplacementBurstStaysWithinBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		answer  bool // the stuck node answers once the bound is checked
	}{
		{"node answers", waitMax, true},
		{"node never answers", 2 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := map[string]*recorder{"a": newRecorder(true), "b": newRecorder(true), "c": newRecorder(true)}
			nodes := map[string]*testNode{}
			for name, rec := range recs {
				defer rec.release()
				nodes[name] = startNode(t, name, false, map[queue.Topic]queue.Listener{topic: rec})
			}
			r := newRouter(t, nodes["a"], nodes["b"], nodes["c"])
			cfg := fastConfig()
			cfg.MaxBytesPerNode, cfg.MaxBatchBytes, cfg.PublishWait = 32<<10, 4<<10, 50*time.Millisecond
			cfg.StallTimeout = time.Minute // only the removal moves the work
			c := newClient(t, cfg, r)
			payload := make([]byte, 500)

			shardOf := map[string]uint32{}
			for sh := range uint32(shardNum) {
				shardOf[primary(t, r, sh)] = sh
			}
			if len(shardOf) != 3 {
				t.Fatalf("shards are placed on %d of the 3 nodes: the test proves nothing", len(shardOf))
			}
			var (
				mu   sync.Mutex
				msgs []sent
				wg   sync.WaitGroup
			)
			for name, sh := range shardOf {
				wg.Go(func() {
					got := fillNode(t, c, tc.timeout, sh, name, payload)
					mu.Lock()
					msgs = append(msgs, got...)
					mu.Unlock()
				})
			}
			wg.Wait()

			// What b holds, sampled from before a and c leave until every
			// message has ended.
			var peak atomic.Int64
			sample := func() int64 {
				ns, _ := nodeStats(c, "b")
				if ns.BytesInUse > peak.Load() {
					peak.Store(ns.BytesInUse)
				}
				return ns.BytesInUse
			}
			stop := make(chan struct{})
			var sampler sync.WaitGroup
			sampler.Go(func() {
				tk := time.NewTicker(time.Millisecond)
				defer tk.Stop()
				for {
					sample()
					select {
					case <-stop:
						return
					case <-tk.C:
					}
				}
			})
			setNodes(t, r, nodes["b"])
			poll.Until(t, "nodes a and c to hand their work over to b", func() bool {
				_, a := nodeStats(c, "a")
				_, cc := nodeStats(c, "c")
				return !a && !cc && sample() > cfg.MaxBytesPerNode
			})
			if tc.answer {
				recs["b"].release()
			}
			acked, failed := outcomes(t, msgs)
			close(stop)
			sampler.Wait()
			bound := 2*cfg.MaxBytesPerNode + int64(len(payload)+16)
			if p := peak.Load(); p > bound {
				t.Errorf("node b held %d bytes, bound %d (twice its budget of %d)", p, bound, cfg.MaxBytesPerNode)
			}
			for p, err := range failed {
				if tc.answer || !errors.Is(err, queue.ErrDeadline) {
					t.Fatalf("%s failed: %v", p, err)
				}
			}
			if tc.answer && len(acked) != len(msgs) {
				t.Fatalf("%d of %d acked", len(acked), len(msgs))
			}
			if !tc.answer && len(acked) != 0 {
				t.Fatalf("%d acked by a node that never answered", len(acked))
			}
			for _, m := range acked {
				if !recs["b"].has(m.payload + string(payload)) {
					t.Fatalf("%s acked but not persisted by b", m.payload)
				}
			}
			t.Logf("%d messages, b peaked at %d bytes (budget %d)", len(msgs), peak.Load(), cfg.MaxBytesPerNode)
		})
	}
}

// TestFailingNodeHoldsItsPublishersBack: a node that fails every message
// at once with a retryable code, while the node its messages fail over to
// is stuck and full. The failed messages wait to be re-placed counted by
// the failing node's budget, so its publishers are held back (Publish
// ends with ErrResourceExhausted) instead of feeding an ever longer retry
// list; once the other node answers, every message is acked there.
func TestFailingNodeHoldsItsPublishersBack(t *testing.T) {
	refuse := queue.ListenerFunc(func(_ context.Context, b queue.Batch) queue.Result {
		return queue.Result{Errs: fill(len(b.Messages), queue.ErrResourceExhausted)}
	})
	recB := newRecorder(true)
	defer recB.release()
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: refuse})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB})
	r := newRouter(t, a, b)
	cfg := fastConfig()
	cfg.MaxBytesPerNode, cfg.MaxBatchBytes, cfg.PublishWait = 32<<10, 4<<10, 50*time.Millisecond
	cfg.StallTimeout = time.Minute
	c := newClient(t, cfg, r)
	shardOf := map[string]uint32{}
	for sh := range uint32(shardNum) {
		shardOf[primary(t, r, sh)] = sh
	}
	if len(shardOf) != 2 {
		t.Fatalf("shards are placed on %d of the 2 nodes: the test proves nothing", len(shardOf))
	}
	payload := make([]byte, 500)
	msgs := fillNode(t, c, waitMax, shardOf["b"], "b", payload)
	// 1000 messages are 15 times what both budgets hold together.
	const most = 1000
	p := c.NewBatchPublisher(waitMax)
	var exhausted error
	for i := 0; i < most && exhausted == nil; i++ {
		s := sent{payload: fmt.Sprintf("a-%d", i), shard: shardOf["a"]}
		f, err := p.Publish(context.Background(), topic, queue.Message{Group: group, Shard: s.shard, Payload: append([]byte(s.payload), payload...)})
		if err != nil {
			exhausted = err
			break
		}
		s.f = f
		msgs = append(msgs, s)
	}
	if !errors.Is(exhausted, queue.ErrResourceExhausted) {
		t.Fatalf("after %d messages to a node failing them all: %v, want ErrResourceExhausted", len(msgs), exhausted)
	}
	if st := c.Stats(); st.BytesInUse > 2*2*cfg.MaxBytesPerNode+2*int64(len(payload)+16) {
		t.Errorf("%d bytes in use over two nodes of budget %d", st.BytesInUse, cfg.MaxBytesPerNode)
	}
	recB.release()
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d of %d failed, e.g. %s", len(failed), len(msgs), first(failed))
	}
	for _, m := range acked {
		if !recB.has(m.payload + string(payload)) {
			t.Fatalf("%s acked but not persisted by b", m.payload)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
