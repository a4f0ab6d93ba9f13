package test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// A query with trace = true answers how it ran (BanyanDB's
// common.v1.Trace): a span for the query with one per group asked and one
// for the merge, each timed; without it, no trace.
func TestQueryExecutionTrace(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		checkQueryTrace(t, conn)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		checkQueryTrace(t, c.liaisons[0])
	})
}

func checkQueryTrace(t *testing.T, conn *grpc.ClientConn) {
	createStreamSchema(t, conn, 4)
	checkStreamRoundTrip(t, conn, 30, 6)
	tr := &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))}
	for _, on := range []bool{false, true} {
		resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
			Groups: []string{streamGroup}, Name: streamName, TimeRange: tr, Limit: 10, Trace: on,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			if resp.GetTrace() != nil {
				t.Errorf("trace = false answered a trace: %v", resp.GetTrace())
			}
			continue
		}
		checkSpans(t, "stream query", resp.GetTrace(), "elements", "10")
	}
	writeCPM(t, conn, 0)
	resp, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), &measurev1.QueryRequest{
		Groups: []string{cpmGroup}, Name: cpmName, TimeRange: tr, Trace: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, "measure query", resp.GetTrace(), "points", "6")
}

// checkSpans checks a trace has one root span named like prefix, timed,
// with children, the last tagged key = value.
func checkSpans(t *testing.T, prefix string, tr *commonv1.Trace, key, value string) {
	t.Helper()
	if tr == nil || tr.GetTraceId() == "" || len(tr.GetSpans()) != 1 {
		t.Fatalf("%s trace: %v", prefix, tr)
	}
	root := tr.GetSpans()[0]
	if !strings.HasPrefix(root.GetMessage(), prefix) || len(root.GetChildren()) < 2 {
		t.Fatalf("%s root span: %v", prefix, root)
	}
	for _, s := range append([]*commonv1.Span{root}, root.GetChildren()...) {
		if s.GetStartTime() == nil || s.GetEndTime() == nil || s.GetEndTime().AsTime().Before(s.GetStartTime().AsTime()) || s.GetDuration() < 0 {
			t.Errorf("%s span %q not timed: %v", prefix, s.GetMessage(), s)
		}
	}
	last := root.GetChildren()[len(root.GetChildren())-1]
	found := false
	for _, tag := range last.GetTags() {
		found = found || (tag.GetKey() == key && tag.GetValue() == value)
	}
	if !found {
		t.Errorf("%s: last span %v lacks %s = %s", prefix, last, key, value)
	}
}
