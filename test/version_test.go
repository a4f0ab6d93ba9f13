package test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// checkRewriteWins writes one metric point three times without a version,
// as SkyWalking OAP re-writes a metric: the message ids (OAP's nanosecond
// clock) are the versions, so the write with the greatest message id is
// the one read back, whatever order the writes arrived in.
func checkRewriteWins(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	createMeasureSchema(t, conn, 2)
	point := func(count int64) *measurev1.DataPointValue {
		dp := testDataPoint(0, 1)
		dp.Fields[0] = &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: count}}}
		return dp
	}
	md := &commonv1.Metadata{Group: measureGroup, Name: measureName}
	for _, w := range []struct{ id, count int64 }{{2000, 2}, {3000, 3}, {1000, 1}} { // the oldest re-write arrives last
		resps, err := writeMeasures(t, conn, []*measurev1.WriteRequest{{Metadata: md, MessageId: uint64(w.id), DataPoint: point(w.count)}})
		if err != nil || len(resps) != 1 || resps[0].GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("write %d: %v %v", w.id, resps, err)
		}
	}
	resp, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), &measurev1.QueryRequest{
		Groups: []string{measureGroup}, Name: measureName,
		TimeRange:       &modelv1.TimeRange{Begin: timestamppb.New(baseTime), End: timestamppb.New(baseTime.Add(time.Hour))},
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"count"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetDataPoints()) != 1 {
		t.Fatalf("%d points, want the one", len(resp.GetDataPoints()))
	}
	if got := resp.GetDataPoints()[0].GetFields()[0].GetValue().GetInt().GetValue(); got != 3 {
		t.Fatalf("read back count %d, want 3 (the write with the greatest message id)", got)
	}
}

func TestStandaloneMeasureRewriteWins(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	checkRewriteWins(t, conn)
}

func TestClusterMeasureRewriteWins(t *testing.T) {
	c := startCluster(t, 2, 1)
	checkRewriteWins(t, c.liaisons[0])
}

// checkPointRead reads as OAP's metrics DAO reads before it merges: IN
// over entity ids and a time range whose begin is its end, one point in
// time, which the range holds (BanyanDB's ranges hold both ends).
func checkPointRead(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	createMeasureSchema(t, conn, 2)
	md := &commonv1.Metadata{Group: measureGroup, Name: measureName}
	var reqs []*measurev1.WriteRequest
	for i := range 6 { // services svc-0..svc-2, at baseTime and a second later
		reqs = append(reqs, &measurev1.WriteRequest{Metadata: md, MessageId: uint64(i + 1), DataPoint: testDataPoint(i, 3)})
	}
	if resps, err := writeMeasures(t, conn, reqs); err != nil || len(resps) != len(reqs) {
		t.Fatalf("writes: %v %v", resps, err)
	}
	at := timestamppb.New(baseTime)
	resp, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), &measurev1.QueryRequest{
		Groups: []string{measureGroup}, Name: measureName,
		TimeRange: &modelv1.TimeRange{Begin: at, End: at},
		Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
			Name: "service", Op: modelv1.Condition_BINARY_OP_IN,
			Value: &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"svc-0", "svc-2"}}}},
		}}},
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"count"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, dp := range resp.GetDataPoints() {
		got = append(got, dp.GetFields()[0].GetValue().GetInt().GetValue())
	}
	slices.Sort(got)
	if !slices.Equal(got, []int64{0, 2}) {
		t.Fatalf("point read returned counts %v, want [0 2] (svc-0 and svc-2 at the one time)", got)
	}
}

func TestStandaloneMeasurePointRead(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	checkPointRead(t, conn)
}

func TestClusterMeasurePointRead(t *testing.T) {
	c := startCluster(t, 2, 1)
	checkPointRead(t, c.liaisons[0])
}
