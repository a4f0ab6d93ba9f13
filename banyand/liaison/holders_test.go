package liaison

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/elementid"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// TestHoldersUnreachable: a node that holds shards of a group but is not in
// the node table is unreachable; live ones and other groups' holders are
// not.
func TestHoldersUnreachable(t *testing.T) {
	router := route.NewRouter()
	if _, err := router.Update([]route.Node{{Name: "data-0", Addr: "a:1"}}, []route.Group{{Name: "g", ShardNum: 4}}); err != nil {
		t.Fatal(err)
	}
	h := NewHolders(router)
	if got := h.Unreachable("g", nil); got != nil {
		t.Fatalf("before any record: %v", got)
	}
	select {
	case <-h.Ready():
		t.Fatal("ready before the first set")
	default:
	}
	held := map[string]map[string][]uint32{
		"g":     {"data-0": {0, 1}, "data-1": {2, 3}, "data-2": {1}},
		"other": {"data-9": {0}},
	}
	h.Set(held, nil)
	<-h.Ready()
	got := h.Unreachable("g", nil)
	if len(got) != 2 || got[0].String() != "data-1 (shards [2 3])" || got[1].Node != "data-2" {
		t.Fatalf("unreachable = %v", got)
	}
	if got := h.Unreachable("nope", nil); got != nil {
		t.Fatalf("unreachable of a group nobody holds = %v", got)
	}

	// With replicas, a shard another live holder has is not missed.
	if _, err := router.Update([]route.Node{{Name: "data-0", Addr: "a:1"}}, []route.Group{{Name: "g", ShardNum: 4, Replicas: 1}}); err != nil {
		t.Fatal(err)
	}
	got = h.Unreachable("g", nil)
	if len(got) != 1 || got[0].String() != "data-1 (shards [2 3])" {
		t.Fatalf("unreachable with replicas = %v, want data-1's shards 2 and 3 only (data-0 holds shard 1)", got)
	}

	// A node away that keeps hints of a shard may hold the only copy of
	// some of its writes: another live holder does not cover it.
	h.Set(held, map[string]map[string][]uint32{"g": {"data-2": {1}}})
	got = h.Unreachable("g", nil)
	if len(got) != 2 || got[1].String() != "data-2 (shards [1])" {
		t.Fatalf("unreachable with data-2 hinting shard 1 = %v, want data-2's shard 1 too", got)
	}

	// Against the nodes that answered rather than the table: data-0 is in
	// the table, but a query it did not answer misses it.
	h.Set(held, nil)
	if _, err := router.Update([]route.Node{{Name: "data-0", Addr: "a:1"}}, []route.Group{{Name: "g", ShardNum: 4}}); err != nil {
		t.Fatal(err)
	}
	got = h.Unreachable("g", map[string]bool{"data-1": true, "data-2": true})
	if len(got) != 1 || got[0].String() != "data-0 (shards [0 1])" {
		t.Fatalf("unreachable when data-1 and data-2 answered = %v, want data-0's shards", got)
	}
}

type fixedHolders []Unreachable

func (f fixedHolders) Unreachable(string, map[string]bool) []Unreachable { return f }

type countingCounter struct{ n atomic.Int64 }

func (c *countingCounter) Inc() { c.n.Add(1) }

// TestQueryFailsWithoutAHolder: a query of a group with an unreachable
// holder is UNAVAILABLE naming the node and its shards, before any node is
// asked; with partial answers allowed it goes on and is counted.
func TestQueryFailsWithoutAHolder(t *testing.T) {
	away := fixedHolders{{Node: "data-1", Shards: []uint32{2, 3}}}
	q := &fakeQueue{}
	svc := NewServices(WriteConfig{}, Deps{Logger: discardLogger, Schema: newTestSchema(t), Queue: q, Now: testNow, Holders: away})
	tr := &modelv1.TimeRange{Begin: timestamppb.New(time.Unix(0, 0)), End: timestamppb.New(time.Unix(3600, 0))}
	req := &streamv1.QueryRequest{Groups: []string{testGroup}, Name: "s", TimeRange: tr}
	_, err := svc.Stream.Query(context.Background(), req)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "data-1 (shards [2 3])") {
		t.Fatalf("query with a holder away: %v, want UNAVAILABLE naming data-1 and its shards", err)
	}

	partial := &countingCounter{}
	svc = NewServices(WriteConfig{}, Deps{Logger: discardLogger, Schema: newTestSchema(t), Queue: q, Now: testNow,
		Holders: away, AllowPartial: true, PartialAnswers: partial})
	_, err = svc.Stream.Query(context.Background(), req)
	// The fake queue has no nodes: the query got past the holder check.
	if status.Code(err) != codes.Unavailable || strings.Contains(err.Error(), "data-1") {
		t.Fatalf("partial query: %v, want it to reach the queue", err)
	}
	if partial.n.Load() != 1 {
		t.Fatalf("partial answers counted %d, want 1", partial.n.Load())
	}
}

// replyingQueue answers every broadcast with fixed node replies.
type replyingQueue struct {
	*fakeQueue
	replies []queue.Reply
}

func (q *replyingQueue) Broadcast(context.Context, queue.Topic, string, []byte) ([]queue.Reply, error) {
	return q.replies, nil
}

// TestStreamQueryKeepsTheLaterCopy: of one element (group, series,
// timestamp, id) that two nodes answer in two versions, the query returns
// the higher version once; elements of other ids stay apart, and one
// written with the same id in another series is, as in BanyanDB, the
// same element: the first in the answer's order is kept; elements written
// without an id are each their own. Ids are answered in BanyanDB's form.
func TestStreamQueryKeepsTheLaterCopy(t *testing.T) {
	ts := timestamppb.New(time.Unix(100, 0))
	el := func(id, v string) *streamv1.Element {
		return &streamv1.Element{ElementId: id, Timestamp: ts, TagFamilies: []*modelv1.TagFamily{
			{Name: "base", Tags: []*modelv1.Tag{{Key: "str", Value: vStr(v)}}}}}
	}
	reply := func(node string, res *clusterv1.StreamQueryResult) queue.Reply {
		b, err := proto.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return queue.Reply{Node: node, Payload: b}
	}
	q := &replyingQueue{fakeQueue: &fakeQueue{}, replies: []queue.Reply{
		reply("a", &clusterv1.StreamQueryResult{Elements: []*streamv1.Element{el("x", "old"), el("y", "only"), el("", "unnamed")},
			SeriesKeys: [][]byte{[]byte("s1"), []byte("s1"), []byte("s3")}, Versions: []int64{5, 5, 1}}),
		reply("b", &clusterv1.StreamQueryResult{Elements: []*streamv1.Element{el("x", "new"), el("x", "other series"), el("", "unnamed too")},
			SeriesKeys: [][]byte{[]byte("s1"), []byte("s2"), []byte("s4")}, Versions: []int64{9, 1, 1}}),
	}}
	svc := NewServices(WriteConfig{}, Deps{Logger: discardLogger, Schema: newTestSchema(t), Queue: q, Now: testNow})
	resp, err := svc.Stream.Query(context.Background(), &streamv1.QueryRequest{Groups: []string{testGroup}, Name: "s",
		TimeRange: &modelv1.TimeRange{Begin: ts, End: ts}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range resp.GetElements() {
		got = append(got, e.GetElementId()+"="+e.GetTagFamilies()[0].GetTags()[0].GetValue().GetStr().GetValue())
	}
	slices.Sort(got)
	nanos := ts.AsTime().UnixNano()
	want := []string{elementid.Of(testGroup, "s", "x") + "=new", elementid.Of(testGroup, "s", "y") + "=only",
		elementid.Unnamed(testGroup, "s", "s3", nanos) + "=unnamed", elementid.Unnamed(testGroup, "s", "s4", nanos) + "=unnamed too"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("elements %v, want %v", got, want)
	}
}

// TestQueryChecksTheNodesThatAnswered: the node table may change between
// the holder check and the broadcast (a holder's lease expires): a node
// holding data of the group that was live when checked but did not answer
// fails the query, never an OK answer without its data.
func TestQueryChecksTheNodesThatAnswered(t *testing.T) {
	router := route.NewRouter()
	if _, err := router.Update([]route.Node{{Name: "a", Addr: "a:1"}, {Name: "b", Addr: "b:1"}},
		[]route.Group{{Name: testGroup, ShardNum: 2}}); err != nil {
		t.Fatal(err)
	}
	holders := NewHolders(router)
	holders.Set(map[string]map[string][]uint32{testGroup: {"a": {0}, "b": {1}}}, nil)
	empty, err := proto.Marshal(&clusterv1.StreamQueryResult{})
	if err != nil {
		t.Fatal(err)
	}
	// b is in the table the check reads; the broadcast reached a only.
	q := &replyingQueue{fakeQueue: &fakeQueue{}, replies: []queue.Reply{{Node: "a", Payload: empty}}}
	svc := NewServices(WriteConfig{}, Deps{Logger: discardLogger, Schema: newTestSchema(t), Queue: q, Now: testNow, Holders: holders})
	ts := timestamppb.New(time.Unix(100, 0))
	_, err = svc.Stream.Query(context.Background(), &streamv1.QueryRequest{Groups: []string{testGroup}, Name: "s",
		TimeRange: &modelv1.TimeRange{Begin: ts, End: ts}})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "b (shards [1])") {
		t.Fatalf("query answered by a only while b holds data: %v, want UNAVAILABLE naming b", err)
	}
	q.replies = append(q.replies, queue.Reply{Node: "b", Payload: empty})
	if _, err := svc.Stream.Query(context.Background(), &streamv1.QueryRequest{Groups: []string{testGroup}, Name: "s",
		TimeRange: &modelv1.TimeRange{Begin: ts, End: ts}}); err != nil {
		t.Fatalf("query answered by both holders: %v", err)
	}
}
