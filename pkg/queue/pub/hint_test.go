package pub_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/queue/pub"
)

// hintRecorder is a hint listener that decodes and records every hint.
type hintRecorder struct {
	mu    sync.Mutex
	hints map[string]*clusterv1.Hint // by payload
	calls int
}

func (r *hintRecorder) Handle(_ context.Context, b queue.Batch) queue.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hints == nil {
		r.hints = map[string]*clusterv1.Hint{}
	}
	errs := make([]error, len(b.Messages))
	for i, m := range b.Messages {
		h := &clusterv1.Hint{}
		if err := proto.Unmarshal(m, h); err != nil {
			errs[i] = errors.Join(queue.ErrInvalidMessage, err)
			continue
		}
		r.hints[string(h.GetPayload())] = h
		r.calls++
	}
	return queue.Result{Errs: errs}
}

func (r *hintRecorder) get(payload string) *clusterv1.Hint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hints[payload]
}

func (r *hintRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.hints)
}

// checkHints fails unless every acked message has a hint, on one of recs,
// naming its topic, group and shard.
func checkHints(t *testing.T, acked []sent, recs ...*hintRecorder) {
	t.Helper()
	for _, m := range acked {
		var h *clusterv1.Hint
		for _, r := range recs {
			if h = r.get(m.payload); h != nil {
				break
			}
		}
		if h == nil {
			t.Fatalf("%s acked with a copy missing and no hint recorded", m.payload)
		}
		if h.GetTopic() != string(topic) || h.GetGroup() != group || h.GetShardId() != m.shard {
			t.Fatalf("hint of %s says topic %q group %q shard %d, want %q %q %d",
				m.payload, h.GetTopic(), h.GetGroup(), h.GetShardId(), topic, group, m.shard)
		}
	}
}

// Under HintCopies a message whose group wants more copies than there
// are live nodes succeeds only with a hint holding it on a node that has
// a copy; each message has one hint however many copies it misses.
func TestHintCopiesWhenTheTableHasTooFewNodes(t *testing.T) {
	recA, recB := newRecorder(false), newRecorder(false)
	hintA, hintB := &hintRecorder{}, &hintRecorder{}
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: recA, queue.TopicHint: hintA})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB, queue.TopicHint: hintB})
	cfg := fastConfig()
	cfg.UnderReplicated = pub.HintCopies
	c := newClient(t, cfg, replicatedRouter(t, 3, a, b)) // four copies wanted, two nodes
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	msgs := publishN(context.Background(), t, p, "m", 300)
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	for _, m := range acked {
		if !recA.has(m.payload) || !recB.has(m.payload) {
			t.Fatalf("%s not on both live nodes", m.payload)
		}
	}
	checkHints(t, acked, hintA, hintB)
	if got := hintA.len() + hintB.len(); got != len(msgs) {
		t.Errorf("%d hints for %d messages, want one each", got, len(msgs))
	}
	if st := c.Stats(); st.UnderReplicated != 2*int64(len(msgs)) {
		t.Errorf("UnderReplicated = %d, want two missing copies a message (%d)", st.UnderReplicated, 2*len(msgs))
	}
}

// Under HintCopies a copy given up after it was placed (its node died and
// no other node without a copy is left) is replaced by a hint on a node
// that holds a copy, and the message still succeeds.
func TestHintCopiesWhenANodeDiesUnderWrites(t *testing.T) {
	recA, recB := newRecorder(false), newRecorder(false)
	hintA := &hintRecorder{}
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: recA, queue.TopicHint: hintA})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB, queue.TopicHint: &hintRecorder{}})
	cfg := fastConfig()
	cfg.UnderReplicated = pub.HintCopies
	c := newClient(t, cfg, replicatedRouter(t, 1, a, b))
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	ctx := context.Background()
	if _, failed := outcomes(t, publishN(ctx, t, p, "warm", 4*shardNum)); len(failed) > 0 {
		t.Fatalf("warm-up: %s", first(failed))
	}
	if hintA.len() != 0 {
		t.Fatalf("%d hints with every node up", hintA.len())
	}
	b.stop(t, 0) // stays in the table: its copies are given up once its retry budget runs out
	msgs := publishN(ctx, t, p, "m", 500)
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d failed although a node holding each message was up, e.g. %s", len(failed), first(failed))
	}
	for _, m := range acked {
		if !recA.has(m.payload) {
			t.Fatalf("%s acked but not on a", m.payload)
		}
	}
	checkHints(t, acked, hintA)
	if st := c.Stats(); st.UnderReplicated == 0 {
		t.Error("UnderReplicated = 0: no copy was given up, the test proves nothing")
	}
}

// A node with no hint listener cannot keep a hint: the message fails
// loudly instead of being acked short of copies with nothing recorded.
func TestHintCopiesRefusedFailTheMessage(t *testing.T) {
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: newRecorder(false)})
	cfg := fastConfig()
	cfg.UnderReplicated = pub.HintCopies
	c := newClient(t, cfg, replicatedRouter(t, 1, a))
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	_, failed := outcomes(t, publishN(context.Background(), t, p, "m", 20))
	if len(failed) != 20 {
		t.Fatalf("%d of 20 failed, want all: no node keeps hints", len(failed))
	}
	for _, err := range failed {
		if !errors.Is(err, queue.ErrUnknownTopic) {
			t.Fatalf("failed with %v, want the node's unknown topic", err)
		}
	}
}

// Under FailCopies a message that cannot get all its copies fails with
// ErrUnderReplicated.
func TestFailCopiesWhenTheTableHasTooFewNodes(t *testing.T) {
	rec := newRecorder(false)
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: rec})
	cfg := fastConfig()
	cfg.UnderReplicated = pub.FailCopies
	c := newClient(t, cfg, replicatedRouter(t, 1, a))
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	f, err := p.Publish(context.Background(), topic, queue.Message{Group: group, Payload: []byte("x")})
	if err == nil {
		err = f.Get(context.Background())
	}
	if !errors.Is(err, pub.ErrUnderReplicated) {
		t.Fatalf("publish with one of two nodes: %v, want ErrUnderReplicated", err)
	}
}
