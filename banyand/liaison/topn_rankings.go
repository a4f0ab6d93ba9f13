package liaison

import (
	"cmp"
	"context"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/aggregate"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/banyand/topn"
	"github.com/banyand-io/banyand/pkg/queue"
)

// topNFromRankings answers req from the rankings the data nodes keep (one
// a window, shard and group-by value; package topn): the rankings of the
// windows that start in the time range, whose group-by tags pass the
// request's conditions. Without agg, a list a window of its top_n series;
// with agg, each series' values over the windows it ranked in folded
// with agg, ranked. A ranking holds at most counters_number series, so a
// series outside a window's counters_number does not count in that
// window.
func (s *MeasureService) topNFromRankings(ctx context.Context, req *measurev1.TopNRequest, snap *schemaSnapshot) (*measurev1.TopNResponse, error) {
	var sort modelv1.Sort
	sh := &shaping{agg: req.GetAgg()}
	windows := map[int64][]*measurev1.TopNList_Item{}
	var parts []part // with agg, pushed down: a partial a series
	pushed := req.GetAgg() != modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED
	src := snap.src
	for _, g := range req.GetGroups() {
		agg, measure, q, _, err := topNGroup(src, g, req, sh, &sort) // checks the conditions
		if err != nil {
			return nil, err
		}
		stored := modelv1.Sort_SORT_DESC
		if sort == modelv1.Sort_SORT_ASC {
			stored = modelv1.Sort_SORT_ASC
		}
		var crit *modelv1.Criteria
		for _, c := range req.GetConditions() {
			next := &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: c}}
			if crit != nil {
				next = and(crit, next)
			}
			crit = next
		}
		rq := &measurev1.QueryRequest{
			Groups: q.GetGroups(), Name: topn.RecordName(topn.AggID(agg), stored), TimeRange: req.GetTimeRange(), Criteria: crit,
			FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{topn.FieldList}},
			Limit:           schema.MaxQueryWindow,
		}
		rschema := topn.ResultSchema(agg, measure, stored)
		if pushed {
			// Each data node folds the rankings of the shards it answers
			// for into a partial a series, as a measure query's group by.
			srcLayout := snap.measures[nameKey{Group: measure.GetMetadata().GetGroup(), Name: measure.GetMetadata().GetName()}]
			if srcLayout != nil {
				one := proto.CloneOf(rq)
				one.FieldProjection = nil
				one.Agg = &measurev1.QueryRequest_Aggregation{Function: req.GetAgg(), FieldName: topn.FieldList}
				got, ok, err := s.pushDown(ctx, &measureLayout{layout: srcLayout.layout, schema: rschema}, one, nil, nil)
				if err != nil {
					return nil, err
				}
				if ok {
					for i := range got {
						got[i].entity = got[i].first.GetTagFamilies()[0].GetTags()
					}
					parts = append(parts, got...)
					continue
				}
			}
			pushed = false
		}
		replies, err := ask[measurev1.QueryResponse](ctx, s.query, queue.TopicMeasureQuery, measure.GetMetadata().GetGroup(),
			&clusterv1.MeasureQuery{Request: rq, Schema: rschema}, nil)
		if err != nil {
			return nil, err
		}
		// A ranking is a window's record on each node holding its shard:
		// of the copies, the highest version.
		type recordTime struct {
			sid uint64
			ts  int64
		}
		latest := map[recordTime]*measurev1.DataPoint{}
		for _, resp := range replies {
			for _, dp := range resp.GetDataPoints() {
				k := recordTime{dp.GetSid(), dp.GetTimestamp().AsTime().UnixNano()}
				if prev, ok := latest[k]; !ok || dp.GetVersion() > prev.GetVersion() {
					latest[k] = dp
				}
			}
		}
		for k, dp := range latest {
			items, err := topn.Items(pointField(dp, topn.FieldList).GetBinaryData())
			if err != nil {
				return nil, status.Errorf(codes.Internal, "top-N aggregation %s: a stored ranking does not decode: %v", topn.AggID(agg), err)
			}
			windows[k.ts] = append(windows[k.ts], items...)
		}
	}
	desc := sort != modelv1.Sort_SORT_ASC
	order := func(a, b *measurev1.TopNList_Item) int {
		c := cmp.Compare(aggregate.Numeric(a.GetValue()), aggregate.Numeric(b.GetValue()))
		if desc {
			return -c
		}
		return c
	}
	starts := make([]int64, 0, len(windows))
	for ts := range windows {
		starts = append(starts, ts)
	}
	slices.Sort(starts)
	resp := &measurev1.TopNResponse{}
	if req.GetAgg() == modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED {
		for _, ts := range starts {
			items := windows[ts]
			slices.SortStableFunc(items, order)
			resp.Lists = append(resp.Lists, &measurev1.TopNList{Timestamp: timestamppb.New(time.Unix(0, ts)), Items: items[:min(len(items), int(req.GetTopN()))]})
		}
		return resp, nil
	}
	if pushed {
		list, err := rankAggregated(sh, sh.merge(parts, false), sort, int(req.GetTopN()))
		if err != nil {
			return nil, err
		}
		if len(list.GetItems()) > 0 {
			resp.Lists = append(resp.Lists, list)
		}
		return resp, nil
	}
	// Each series' values over the windows, in the order of its first.
	series := parts
	index := map[string]int{}
	for _, ts := range starts {
		for _, it := range windows[ts] {
			key := string(entityKey(it.GetEntity()))
			i, ok := index[key]
			if !ok {
				i = len(series)
				index[key] = i
				series = append(series, part{key: key, entity: it.GetEntity()})
			}
			series[i].stats.Add(it.GetValue())
		}
	}
	list, err := rankAggregated(sh, series, sort, int(req.GetTopN()))
	if err != nil {
		return nil, err
	}
	if len(list.GetItems()) > 0 {
		resp.Lists = append(resp.Lists, list)
	}
	return resp, nil
}

// entityKey identifies a series by the values naming it.
func entityKey(entity []*modelv1.Tag) []byte {
	var k []byte
	for _, t := range entity {
		k = aggregate.AppendKey(k, t.GetValue())
	}
	return k
}

func and(l, r *modelv1.Criteria) *modelv1.Criteria {
	return &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{Op: modelv1.LogicalExpression_LOGICAL_OP_AND, Left: l, Right: r}}}
}
