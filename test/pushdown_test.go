package test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/internal/poll"
)

// A measure aggregation runs on the data nodes when each shard has one
// node holding all of its points: the trace names the nodes that answered
// partial aggregates and how many points each folded (each point once,
// though replicas keep two copies). When a holder of a shard falls out
// of its placement (a node stopped), the group's points are shipped
// instead, and the answer stays the same.
func TestMeasureAggregationPushDown(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		writeCPM(t, conn, 0)
		nodes, points, _ := sumByIDPushedDown(t, conn)
		if nodes != 1 || points != len(cpmPoints) {
			t.Fatalf("standalone: %d nodes folded %d points, want 1 node and %d", nodes, points, len(cpmPoints))
		}
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		conn := c.liaisons[0]
		writeCPM(t, conn, 1)
		// The first queries may ship points: the liaison follows the
		// holder records a moment after the writes.
		poll.Within(t, 15*time.Second, "aggregation answered by both data nodes", func() bool {
			nodes, points, _ := sumByIDPushedDown(t, conn)
			if nodes > 0 && points != len(cpmPoints) {
				t.Fatalf("%d nodes folded %d points, want each of the %d points once", nodes, points, len(cpmPoints))
			}
			return nodes == 2
		})
		c.data[1].stop(t)
		poll.Within(t, 15*time.Second, "points shipped once a holder is outside the placement", func() bool {
			_, _, shipped := sumByIDPushedDown(t, conn)
			return shipped
		})
	})
}

// sumByIDPushedDown asks the sum of value by id, checks the answer and
// returns from its trace how many data nodes answered partial aggregates,
// how many points they folded, and whether points were shipped instead.
func sumByIDPushedDown(t *testing.T, conn *grpc.ClientConn) (nodes, points int, shipped bool) {
	t.Helper()
	idOnly := &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"id"}}}}
	resp, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), &measurev1.QueryRequest{
		Groups: []string{cpmGroup}, Name: cpmName, Trace: true,
		TimeRange:     &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
		TagProjection: idOnly,
		GroupBy:       &measurev1.QueryRequest_GroupBy{TagProjection: idOnly, FieldName: "value"},
		Agg:           &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM, FieldName: "value"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, dp := range resp.GetDataPoints() {
		got = append(got, dp.GetTagFamilies()[0].GetTags()[0].GetValue().GetStr().GetValue()+"="+
			strconv.FormatInt(dp.GetFields()[0].GetValue().GetInt().GetValue(), 10))
	}
	if want := []string{"svc1=6", "svc2=9", "svc3=6"}; !equalStrings(got, want) {
		t.Fatalf("sum by id: %v, want %v", got, want)
	}
	return pushDownTrace(resp.GetTrace())
}

// pushDownTrace reads from a measure query's trace how many data nodes
// answered partial aggregates, how many points they folded, and whether
// points were shipped instead.
func pushDownTrace(tr *commonv1.Trace) (nodes, points int, shipped bool) {
	var walk func(s *commonv1.Span)
	walk = func(s *commonv1.Span) {
		if strings.HasPrefix(s.GetMessage(), "node ") && strings.HasSuffix(s.GetMessage(), "partial aggregates") {
			nodes++
			for _, tag := range s.GetTags() {
				if tag.GetKey() == "points" {
					n, _ := strconv.Atoi(tag.GetValue())
					points += n
				}
			}
		}
		shipped = shipped || strings.Contains(s.GetMessage(), "ask the data nodes for points")
		for _, c := range s.GetChildren() {
			walk(c)
		}
	}
	for _, s := range tr.GetSpans() {
		walk(s)
	}
	return nodes, points, shipped
}
