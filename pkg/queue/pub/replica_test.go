package pub_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// replicatedRouter places group with the given replicas on nodes.
func replicatedRouter(t *testing.T, replicas uint32, nodes ...*testNode) *route.Router {
	t.Helper()
	r := route.NewRouter()
	rn := make([]route.Node, len(nodes))
	for i, n := range nodes {
		rn[i] = n.routeNode()
	}
	if _, err := r.Update(rn, []route.Group{{Name: group, ShardNum: shardNum, Replicas: replicas}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// holders lists the nodes whose listeners persisted payload.
func holders(payload string, recs map[string]*recorder) []string {
	var out []string
	for name, rec := range recs {
		if rec.has(payload) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// TestReplicasEachCopyLands: with replicas = 1 on three nodes, every acked
// message was persisted by exactly the two nodes placement gives its shard.
func TestReplicasEachCopyLands(t *testing.T) {
	recs := map[string]*recorder{}
	var nodes []*testNode
	for _, name := range []string{"a", "b", "c"} {
		recs[name] = newRecorder(false)
		nodes = append(nodes, startNode(t, name, false, map[queue.Topic]queue.Listener{topic: recs[name]}))
	}
	r := replicatedRouter(t, 1, nodes...)
	c := newClient(t, fastConfig(), r)
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	msgs := publishN(context.Background(), t, p, "m", 2000)
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	for _, m := range acked {
		ns, err := r.Current().Nodes(group, m.shard)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{ns[0].Name, ns[1].Name}
		slices.Sort(want)
		if got := holders(m.payload, recs); !slices.Equal(got, want) {
			t.Fatalf("%s (shard %d) persisted by %v, want exactly %v", m.payload, m.shard, got, want)
		}
	}
	if st := c.Stats(); st.UnderReplicated != 0 {
		t.Errorf("UnderReplicated = %d with enough nodes", st.UnderReplicated)
	}
}

// TestReplicasNodeDown: with replicas = 1 and one of three nodes dead, the
// copies meant for it are re-placed, so every message still lands on two
// distinct nodes: the two that are up.
func TestReplicasNodeDown(t *testing.T) {
	recs := map[string]*recorder{}
	var nodes []*testNode
	for _, name := range []string{"a", "b", "c"} {
		recs[name] = newRecorder(false)
		nodes = append(nodes, startNode(t, name, false, map[queue.Topic]queue.Listener{topic: recs[name]}))
	}
	r := replicatedRouter(t, 1, nodes...)
	c := newClient(t, fastConfig(), r)
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	ctx := context.Background()
	// Warm up so every node is connected, then kill c (it stays in the table).
	if _, failed := outcomes(t, publishN(ctx, t, p, "warm", 4*shardNum)); len(failed) > 0 {
		t.Fatalf("warm-up: %s", first(failed))
	}
	nodes[2].stop(t, 0)
	delete(recs, "c")

	msgs := publishN(ctx, t, p, "m", 2000)
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d failed although two nodes were up, e.g. %s", len(failed), first(failed))
	}
	onC := 0
	for _, m := range acked {
		ns, err := r.Current().Nodes(group, m.shard)
		if err != nil {
			t.Fatal(err)
		}
		if ns[0].Name == "c" || ns[1].Name == "c" {
			onC++
		}
		if got := holders(m.payload, recs); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("%s (shard %d, placed on %s+%s) persisted by %v, want [a b]", m.payload, m.shard, ns[0].Name, ns[1].Name, got)
		}
	}
	if onC == 0 {
		t.Fatal("no shard has a copy on node c: the test proves nothing")
	}
	if st := c.Stats(); st.Replaced == 0 || st.UnderReplicated != 0 {
		t.Errorf("stats: %+v, want Replaced > 0 and UnderReplicated = 0", st)
	}
}

// TestReplicasUnderReplicated: a group wanting three copies on two live
// nodes gets two; the futures succeed and the missing copies are counted.
func TestReplicasUnderReplicated(t *testing.T) {
	recA, recB := newRecorder(false), newRecorder(false)
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: recA})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB})
	c := newClient(t, fastConfig(), replicatedRouter(t, 2, a, b))
	p := c.NewBatchPublisher(waitMax)
	defer p.Close()
	msgs := publishN(context.Background(), t, p, "m", 200)
	acked, failed := outcomes(t, msgs)
	if len(failed) > 0 {
		t.Fatalf("%d failed, e.g. %s", len(failed), first(failed))
	}
	for _, m := range acked {
		if !recA.has(m.payload) || !recB.has(m.payload) {
			t.Fatalf("%s not on both live nodes", m.payload)
		}
	}
	if st := c.Stats(); st.UnderReplicated != int64(len(msgs)) {
		t.Errorf("UnderReplicated = %d, want one missing copy per message (%d)", st.UnderReplicated, len(msgs))
	}
}

// TestReplicasDeadlineFailsMessage: a copy that cannot be acked before the
// deadline fails the message, even though the other copy was acked.
func TestReplicasDeadlineFailsMessage(t *testing.T) {
	recA, recB := newRecorder(false), newRecorder(true)
	defer recB.release()
	a := startNode(t, "a", false, map[queue.Topic]queue.Listener{topic: recA})
	b := startNode(t, "b", false, map[queue.Topic]queue.Listener{topic: recB})
	cfg := fastConfig()
	cfg.StallTimeout = time.Minute // b is slow, not broken
	c := newClient(t, cfg, replicatedRouter(t, 1, a, b))
	p := c.NewBatchPublisher(200 * time.Millisecond)
	defer p.Close()
	f, err := p.Publish(context.Background(), topic, queue.Message{Group: group, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitMax)
	defer cancel()
	if err := f.Get(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Get = %v, want a deadline failure", err)
	}
	poll.Until(t, "the copy on a", func() bool { return recA.has("x") })
}
