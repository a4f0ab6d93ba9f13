package storage

import (
	"context"
	"testing"
	"time"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// TestQueryStageTrace: a query asked with trace = true answers the node's
// scan as one span, its counts those of the scan (segments read, records
// visited, records that met the criteria, results sent); without
// trace = true, no span.
func TestQueryStageTrace(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	day := time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)
	var es []elem
	for i, code := range []int64{200, 500, 200, 500, 500} {
		es = append(es, elem{service: "svc", instance: "i", id: string(rune('a' + i)), code: code, ts: day.Add(time.Duration(i%2) * 24 * time.Hour).Add(time.Duration(i) * time.Minute)})
	}
	mustWriteStream(t, s, es)
	for _, on := range []bool{false, true} {
		res, err := s.QueryStreamResult(context.Background(), streamQuery(&streamv1.QueryRequest{
			TimeRange: timeRange(day.Add(-time.Hour), day.Add(48*time.Hour)), Limit: 2, Trace: on,
			Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
				Name: "code", Op: modelv1.Condition_BINARY_OP_EQ, Value: intv(500),
			}}},
		}))
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			if res.GetTrace() != nil {
				t.Errorf("trace = false answered a trace: %v", res.GetTrace())
			}
			continue
		}
		if len(res.GetTrace().GetSpans()) != 1 {
			t.Fatalf("trace %v: want one span", res.GetTrace())
		}
		span := res.GetTrace().GetSpans()[0]
		got := map[string]string{}
		for _, tag := range span.GetTags() {
			got[tag.GetKey()] = tag.GetValue()
		}
		// Ascending, limit 2: both segments are read (the first holds
		// one match only) and every record of the range visited; the
		// last 500 comes after the two kept, so it is cut before the
		// criteria are evaluated: two match, two are sent.
		want := map[string]string{"segments": "2", "scanned": "5", "matched": "2", "returned": "2"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("span tag %s = %q, want %q (span %v)", k, got[k], v, span)
			}
		}
		if span.GetMessage() != "data node: scan stream" || span.GetDuration() < 0 || span.GetEndTime().AsTime().Before(span.GetStartTime().AsTime()) {
			t.Errorf("span %v: want a timed \"data node: scan stream\"", span)
		}
	}
}

// TestEmptyValuesReadNull: as BanyanDB, an empty string or empty binary
// tag reads back null; other values as written.
func TestEmptyValuesReadNull(t *testing.T) {
	for _, tc := range []struct {
		in, want *modelv1.TagValue
	}{
		{str(""), nullTag()},
		{&modelv1.TagValue{Value: &modelv1.TagValue_BinaryData{}}, nullTag()},
		{nil, nullTag()},
		{str("x"), str("x")},
		{intv(0), intv(0)},
		{&modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{}}}, &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{}}}},
	} {
		if got := answered(tc.in); got.String() != tc.want.String() {
			t.Errorf("answered(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
