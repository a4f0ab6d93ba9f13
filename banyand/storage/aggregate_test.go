package storage

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// A partial query folds only the points of the shards it answers for,
// each group once with its first point and the field's statistics, and
// names every shard it holds points of in the range.
func TestQueryMeasurePartials(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const shardNum = 4
	services := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	shardOf := map[string]uint32{}
	var ps []point
	for i, svc := range services {
		k, err := route.AppendSeriesKey(nil, testMeasure, []route.EntityValue{route.StrValue(svc)})
		if err != nil {
			t.Fatal(err)
		}
		shardOf[svc], _ = route.ShardID(k, shardNum)
		for m := range 3 {
			ps = append(ps, point{service: svc, ts: base.Add(time.Duration(m*10+i) * time.Minute), code: int64(i % 2), total: int64(i*10 + m), version: 1})
		}
	}
	mustWriteMeasure(t, s, ps)
	ask := func(shards []uint32, mod func(*measurev1.QueryRequest)) *clusterv1.MeasurePartials {
		t.Helper()
		req := &measurev1.QueryRequest{
			TimeRange:       timeRange(base, base.Add(time.Hour)),
			TagProjection:   &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"service", "code"}}}},
			FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"total"}},
		}
		mod(req)
		q := measureQuery(req)
		q.Partial = &clusterv1.MeasurePartialPlan{ShardNum: shardNum, Shards: shards}
		res, err := s.QueryMeasurePartials(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	byCode := func(r *measurev1.QueryRequest) {
		r.GroupBy = &measurev1.QueryRequest_GroupBy{TagProjection: &modelv1.TagProjection{
			TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"code"}}}}}
		r.Agg = &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM, FieldName: "total"}
	}
	for _, shards := range [][]uint32{{0, 1, 2, 3}, {0, 2}, {1}, nil} {
		res := ask(shards, byCode)
		var held []uint32
		for _, svc := range services {
			held = append(held, shardOf[svc])
		}
		slices.Sort(held)
		if got := res.GetShardsHeld(); !slices.Equal(got, slices.Compact(held)) {
			t.Errorf("shards %v: held %v, want %v", shards, got, slices.Compact(held))
		}
		// Expected: per code, count and sum over the answered shards,
		// first point the earliest.
		type want struct {
			count   uint64
			sum     int64
			firstTs time.Time
		}
		wants := map[int64]*want{}
		var points uint64
		for _, p := range ps {
			if !slices.Contains(shards, shardOf[p.service]) {
				continue
			}
			points++
			w := wants[p.code]
			if w == nil {
				w = &want{firstTs: p.ts}
				wants[p.code] = w
			}
			w.count++
			w.sum += p.total
			if p.ts.Before(w.firstTs) {
				w.firstTs = p.ts
			}
		}
		if res.GetPoints() != points || len(res.GetGroups()) != len(wants) {
			t.Fatalf("shards %v: %d points in %d groups, want %d in %d", shards, res.GetPoints(), len(res.GetGroups()), points, len(wants))
		}
		for _, g := range res.GetGroups() {
			code := g.GetFirst().GetTagFamilies()[0].GetTags()[1].GetValue().GetInt().GetValue()
			w := wants[code]
			if w == nil || g.GetCount() != w.count || g.GetIntSum() != w.sum || !g.GetFirst().GetTimestamp().AsTime().Equal(w.firstTs) {
				t.Errorf("shards %v: group code=%d: count %d sum %d first %v, want %+v", shards, code, g.GetCount(), g.GetIntSum(),
					g.GetFirst().GetTimestamp().AsTime(), w)
			}
		}
	}
	// Top alone: the node's top N points by the field.
	res := ask([]uint32{0, 1, 2, 3}, func(r *measurev1.QueryRequest) {
		r.Top = &measurev1.QueryRequest_Top{Number: 2, FieldName: "total"}
	})
	var tops []int64
	for _, g := range res.GetGroups() {
		tops = append(tops, g.GetFirst().GetFields()[0].GetValue().GetInt().GetValue())
	}
	if !slices.Equal(tops, []int64{72, 71}) {
		t.Errorf("top 2: %v, want [72 71]", tops)
	}
	// Without the shard count the query is invalid, not a crash.
	q := measureQuery(&measurev1.QueryRequest{TimeRange: timeRange(base, base.Add(time.Hour))})
	q.Partial = &clusterv1.MeasurePartialPlan{}
	if _, err := s.QueryMeasurePartials(context.Background(), q); !errors.Is(err, queue.ErrInvalidMessage) {
		t.Errorf("no shard count: %v, want an invalid message", err)
	}
}
