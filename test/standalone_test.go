package test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

func TestStandaloneStreamRoundTrip(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createStreamSchema(t, conn, 4)
	checkStreamRoundTrip(t, conn, 500, 50)
}

func TestStandaloneMeasureRoundTrip(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createMeasureSchema(t, conn, 3)
	checkMeasureRoundTrip(t, conn, 400, 40)
}

// A standalone keeps its schema and data across a restart.
func TestStandaloneRestartKeepsSchemaAndData(t *testing.T) {
	dir := t.TempDir()
	conn, r := startStandalone(t, dir)
	createStreamSchema(t, conn, 2)
	checkStreamRoundTrip(t, conn, 50, 5)
	r.stop(t)

	conn, _ = startStandalone(t, dir)
	if n := len(queryAllStream(t, conn, 100)); n != 50 {
		t.Fatalf("after restart %d elements readable, want 50", n)
	}
}

// HAVING and NOT_HAVING select by the members of an array tag, through
// the whole stack: labels = ["a", i], codes = [i, -1].
func TestStandaloneHavingArrayMembers(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createStreamSchema(t, conn, 2)
	checkStreamRoundTrip(t, conn, 30, 5)
	query := func(tag string, op modelv1.Condition_BinaryOp, v *modelv1.TagValue) []string {
		resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
			Groups: []string{streamGroup}, Name: streamName, Limit: 100,
			TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
			Criteria:  &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: tag, Op: op, Value: v}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, el := range resp.GetElements() {
			ids = append(ids, el.GetElementId())
		}
		slices.Sort(ids)
		return ids
	}
	strs := func(v ...string) *modelv1.TagValue {
		return &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: v}}}
	}
	ints := func(v ...int64) *modelv1.TagValue {
		return &modelv1.TagValue{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: v}}}
	}
	if got := query("labels", modelv1.Condition_BINARY_OP_HAVING, strs("a", "7")); !slices.Equal(got, answeredIDs("el-00007")) {
		t.Errorf("labels having [a 7]: %v, want [el-00007]", got)
	}
	if got := query("labels", modelv1.Condition_BINARY_OP_HAVING, strs("b", "7")); len(got) != 0 {
		t.Errorf("labels having [b 7]: %v, want none", got)
	}
	if got := query("codes", modelv1.Condition_BINARY_OP_HAVING, ints(2, -1)); !slices.Equal(got, answeredIDs("el-00002")) {
		t.Errorf("codes having [2 -1]: %v, want [el-00002]", got)
	}
	if got := query("codes", modelv1.Condition_BINARY_OP_NOT_HAVING, ints(2)); len(got) != 29 || slices.Contains(got, answeredID("el-00002")) {
		t.Errorf("codes not having [2]: %v, want the 29 others", got)
	}
}
