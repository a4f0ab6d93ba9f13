package liaison

import (
	"cmp"
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/aggregate"
	"github.com/banyand-io/banyand/banyand/schema"
)

// TopN implements MeasureService.TopN as BanyanDB answers it for a
// TopNAggregation (its test cases under topn are the reference): the
// series of the aggregation's source measure in the time range, filtered
// by the request's conditions (on the group-by tags) and the
// aggregation's criteria, each identified by the group-by tags and the
// measure's entity tags; ranked by the aggregation's field, highest first
// unless SORT_ASC, top_n of them. With agg, one list: each series' points
// aggregated over the range (no timestamp); without, a list per point in
// time.
//
// The ranking is computed when asked, not kept up to date as writes
// arrive: it is exact whatever the counters_number and lru_size, and
// costs a scan of the range. With agg it is a group by the series' tags,
// pushed down to the data nodes like a measure query's (parts); without,
// the points are shipped (copies removed, as any measure query).
func (s *MeasureService) TopN(ctx context.Context, req *measurev1.TopNRequest) (*measurev1.TopNResponse, error) {
	if err := checkQuery(req.GetGroups(), req.GetName(), req.GetTimeRange(), nil, 0, 0); err != nil {
		return nil, err
	}
	if req.GetTopN() <= 0 || req.GetTopN() > maxTopN {
		return nil, status.Errorf(codes.InvalidArgument, "top_n %d is not within 1..%d", req.GetTopN(), maxTopN)
	}
	if a := req.GetAgg(); modelv1.AggregationFunction_name[int32(a)] == "" {
		return nil, status.Errorf(codes.InvalidArgument, "agg %v is not one of MEAN, MAX, MIN, COUNT, SUM", a)
	}
	src, snap := s.schema.src.Current(), s.schema.snapshot()
	if s.query.topNRankings {
		return s.topNFromRankings(ctx, req, snap)
	}
	var items []rankedItem
	var parts []part
	var sort modelv1.Sort
	sh := &shaping{agg: req.GetAgg()} // the function and field the series fold by
	for _, g := range req.GetGroups() {
		_, _, q, entity, err := topNGroup(src, g, req, sh, &sort)
		if err != nil {
			return nil, err
		}
		if req.GetAgg() != modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED {
			// Each series folds into one value: a group by the series'
			// tags, answered by the data nodes where the plan allows.
			one := *sh
			one.groupBy = entity
			got, err := s.parts(ctx, snap, q, &one, nil)
			if err != nil {
				return nil, err
			}
			for i := range got {
				got[i].entity = entityOf(got[i].first, entity)
			}
			parts = append(parts, got...)
			continue
		}
		points, err := s.gather(ctx, snap, q, nil, true, nil)
		if err != nil {
			return nil, err
		}
		for _, p := range points {
			items = append(items, rankedItem{ts: p.GetTimestamp().AsTime().UnixNano(), point: p, entity: entityOf(p, entity)})
		}
	}
	field := sh.aggField
	resp := &measurev1.TopNResponse{}
	if req.GetAgg() != modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED {
		list, err := rankAggregated(sh, sh.merge(parts, false), sort, int(req.GetTopN()))
		if err != nil {
			return nil, err
		}
		if len(list.GetItems()) > 0 {
			resp.Lists = append(resp.Lists, list)
		}
		return resp, nil
	}
	slices.SortStableFunc(items, func(a, b rankedItem) int { return cmp.Compare(a.ts, b.ts) })
	for start := 0; start < len(items); {
		end := start
		for end < len(items) && items[end].ts == items[start].ts {
			end++
		}
		list := &measurev1.TopNList{Timestamp: items[start].point.GetTimestamp()}
		window := items[start:end]
		rank(window, field, sort)
		for _, it := range window[:min(len(window), int(req.GetTopN()))] {
			list.Items = append(list.Items, &measurev1.TopNList_Item{Entity: it.entity, Value: pointField(it.point, field), Version: it.point.GetVersion(), Timestamp: it.point.GetTimestamp()})
		}
		resp.Lists = append(resp.Lists, list)
		start = end
	}
	return resp, nil
}

// topNSource returns the top-N aggregation name of group g and its
// source measure.
func topNSource(src *schema.Snapshot, g, name string) (*databasev1.TopNAggregation, *databasev1.Measure, error) {
	agg := src.TopNAggregations[schema.Key{Group: g, Name: name}]
	if agg == nil {
		return nil, nil, status.Errorf(codes.NotFound, "top-N aggregation %s/%s does not exist", g, name)
	}
	measure := src.Measures[schema.Key{Group: agg.GetSourceMeasure().GetGroup(), Name: agg.GetSourceMeasure().GetName()}]
	if measure == nil {
		return nil, nil, status.Errorf(codes.NotFound, "top-N aggregation %s/%s: source measure %s/%s does not exist",
			g, name, agg.GetSourceMeasure().GetGroup(), agg.GetSourceMeasure().GetName())
	}
	return agg, measure, nil
}

// rankedItem is one point of a ranked series.
type rankedItem struct {
	ts     int64
	entity []*modelv1.Tag
	point  *measurev1.DataPoint
}

// rankAggregated ranks the series (groups, in the order of their first
// point) by their aggregate with sh's function.
func rankAggregated(sh *shaping, series []part, sort modelv1.Sort, n int) (*measurev1.TopNList, error) {
	folded := make([]rankedItem, 0, len(series))
	for _, s := range series {
		v, err := s.stats.Result(sh.agg, sh.aggFloat)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "agg: %v", err)
		}
		it := rankedItem{point: &measurev1.DataPoint{Fields: []*measurev1.DataPoint_Field{{Name: sh.aggField, Value: v}}}}
		it.entity = s.entity
		folded = append(folded, it)
	}
	rank(folded, sh.aggField, sort)
	list := &measurev1.TopNList{}
	for _, it := range folded[:min(len(folded), n)] {
		list.Items = append(list.Items, &measurev1.TopNList_Item{Entity: it.entity, Value: pointField(it.point, sh.aggField)})
	}
	return list, nil
}

// entityOf names the series of p by the (family, tag) pairs of entity.
func entityOf(p *measurev1.DataPoint, entity [][2]string) []*modelv1.Tag {
	out := make([]*modelv1.Tag, 0, len(entity))
	for _, ft := range entity {
		v := pointTag(p, ft[0], ft[1])
		if v.GetValue() == nil {
			v = nullTag()
		}
		out = append(out, &modelv1.Tag{Key: ft[1], Value: v})
	}
	return out
}

// rank orders items by field, highest first unless SORT_ASC; ties keep
// their order.
func rank(items []rankedItem, field string, sort modelv1.Sort) {
	slices.SortStableFunc(items, func(a, b rankedItem) int {
		c := cmp.Compare(aggregate.Numeric(pointField(a.point, field)), aggregate.Numeric(pointField(b.point, field)))
		if sort == modelv1.Sort_SORT_ASC {
			return c
		}
		return -c
	})
}

// topNQuery is the measure query a TopN request asks of agg's source
// measure, and the (family, tag) pairs naming a series: the group-by tags,
// then the entity tags not among them.
func topNQuery(req *measurev1.TopNRequest, agg *databasev1.TopNAggregation, m *databasev1.Measure) (*measurev1.QueryRequest, [][2]string, error) {
	var entity [][2]string
	proj := (*modelv1.TagProjection)(nil)
	for _, tag := range append(slices.Clone(agg.GetGroupByTagNames()), m.GetEntity().GetTagNames()...) {
		if slices.ContainsFunc(entity, func(ft [2]string) bool { return ft[1] == tag }) {
			continue
		}
		fam, ok := familyOf(m, tag)
		if !ok {
			return nil, nil, status.Errorf(codes.FailedPrecondition, "top-N aggregation %s: source measure has no tag %q", agg.GetMetadata().GetName(), tag)
		}
		entity = append(entity, [2]string{fam, tag})
		proj = projectTag(proj, fam, tag)
	}
	var crit *modelv1.Criteria
	and := func(c *modelv1.Criteria) {
		if crit == nil {
			crit = c
			return
		}
		crit = &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{Op: modelv1.LogicalExpression_LOGICAL_OP_AND, Left: crit, Right: c}}}
	}
	for _, c := range req.GetConditions() {
		if !slices.Contains(agg.GetGroupByTagNames(), c.GetName()) {
			return nil, nil, status.Errorf(codes.InvalidArgument, "conditions: %q is not a group-by tag of top-N aggregation %s (%v)",
				c.GetName(), agg.GetMetadata().GetName(), agg.GetGroupByTagNames())
		}
		and(&modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: c}})
	}
	if agg.GetCriteria() != nil {
		and(agg.GetCriteria())
	}
	if err := checkCriteria(crit, 0); err != nil {
		return nil, nil, err
	}
	return &measurev1.QueryRequest{
		Groups: []string{agg.GetSourceMeasure().GetGroup()}, Name: agg.GetSourceMeasure().GetName(),
		TimeRange: req.GetTimeRange(), Criteria: crit, TagProjection: proj,
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{agg.GetFieldName()}},
		Limit:           schema.MaxQueryWindow,
	}, entity, nil
}

// topNGroup resolves group g of a TopN request: the aggregation, its
// source measure, the query of the source's points and their entity tags.
// It records the field the series fold by in sh, refusing groups whose
// aggregations rank different fields, and the sort in *sort (the
// request's, else the aggregation's).
func topNGroup(src *schema.Snapshot, g string, req *measurev1.TopNRequest, sh *shaping, sort *modelv1.Sort) (*databasev1.TopNAggregation, *databasev1.Measure, *measurev1.QueryRequest, [][2]string, error) {
	agg, measure, err := topNSource(src, g, req.GetName())
	if err != nil {
		return nil, nil, nil, nil, err
	}
	q, entity, err := topNQuery(req, agg, measure)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if sh.aggField != "" && sh.aggField != agg.GetFieldName() {
		return nil, nil, nil, nil, status.Errorf(codes.InvalidArgument, "top-N aggregations named %q rank field %q in one group and %q in another", req.GetName(), sh.aggField, agg.GetFieldName())
	}
	sh.aggField = agg.GetFieldName()
	if sh.aggFloat, err = numericField([]*databasev1.Measure{measure}, "top-N aggregation", sh.aggField); err != nil {
		return nil, nil, nil, nil, err
	}
	if *sort = req.GetFieldValueSort(); *sort == modelv1.Sort_SORT_UNSPECIFIED {
		*sort = agg.GetFieldValueSort()
	}
	return agg, measure, q, entity, nil
}
