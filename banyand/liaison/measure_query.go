package liaison

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/queue"
)

// Query implements MeasureService.Query.
func (s *MeasureService) Query(ctx context.Context, req *measurev1.QueryRequest) (*measurev1.QueryResponse, error) {
	if err := checkQuery(req.GetGroups(), req.GetName(), req.GetTimeRange(), req.GetCriteria(), req.GetOffset(), req.GetLimit()); err != nil {
		return nil, err
	}
	snap := s.schema.snapshot()
	var shape *shaping
	nodeReq := req
	if needsShaping(req) {
		var err error
		if shape, err = newShaping(req, snap.measureDefs(req.GetGroups(), req.GetName())); err != nil {
			return nil, err
		}
		nodeReq = shape.nodeRequest(req)
	}
	// An index-mode measure answers the newest row of each series in the
	// range: the data nodes send every row, the liaison keeps the newest
	// (gather) and pages.
	indexMode := slices.ContainsFunc(snap.measureDefs(req.GetGroups(), req.GetName()), (*databasev1.Measure).GetIndexMode)
	if indexMode && shape == nil {
		nodeReq = proto.CloneOf(req)
		nodeReq.Offset, nodeReq.Limit = 0, schema.MaxQueryWindow
	}
	// Ordered by an index rule: each group's rule tag, projected too so
	// that the answers merge by it (cut again from the answer below).
	rule := req.GetOrderBy().GetIndexRuleName()
	orderTags := map[string][2]string{} // group → (family, tag)
	if rule != "" {
		for _, g := range req.GetGroups() {
			l := snap.measures[nameKey{Group: g, Name: req.GetName()}]
			if l == nil {
				return nil, status.Errorf(codes.NotFound, "measure %s/%s does not exist", g, req.GetName())
			}
			tag, err := s.schema.orderTag(g, req.GetName(), commonv1.Catalog_CATALOG_MEASURE, rule)
			if err != nil {
				return nil, err
			}
			fam, ok := familyOf(l.schema, tag)
			if !ok {
				return nil, status.Errorf(codes.InvalidArgument, "order_by: index rule %s/%s names tag %q, which measure %s lacks", g, rule, tag, req.GetName())
			}
			orderTags[g] = [2]string{fam, tag}
			if nodeReq == req {
				nodeReq = proto.CloneOf(req)
			}
			nodeReq.TagProjection = projectTag(nodeReq.TagProjection, fam, tag)
		}
	}
	tr := newQueryTrace(req.GetTrace(), "measure query %v/%s", req.GetGroups(), req.GetName())
	if shape != nil && rule == "" {
		parts, err := s.parts(ctx, snap, req, shape, tr)
		if err != nil {
			return nil, err
		}
		span := tr.start("merge the groups; aggregate, top N, offset and limit")
		points, err := shape.finish(req, shape.merge(parts, req.GetOrderBy().GetSort() == modelv1.Sort_SORT_DESC))
		if err != nil {
			return nil, err
		}
		tr.end(span, "points", strconv.Itoa(len(points)))
		return &measurev1.QueryResponse{DataPoints: points, Trace: tr.finish()}, nil
	}
	span := tr.start("ask the data nodes of every group")
	points, err := s.gather(ctx, snap, nodeReq, orderTags, shape != nil || indexMode, span)
	if err != nil {
		return nil, err
	}
	tr.end(span, "points", strconv.Itoa(len(points)))
	span = tr.start("group by, aggregate, top N, offset and limit")
	if shape != nil {
		// Ordered by an index rule: the points' order is the groups'.
		if points, err = shape.finish(req, shape.fold("", points)); err != nil {
			return nil, err
		}
	} else {
		points = page(points, req.GetOffset(), req.GetLimit(), schema.DefaultMeasureLimit)
		if rule != "" {
			for i := range points {
				points[i] = project(req, points[i]) // the order tag only if asked for
			}
		}
	}
	tr.end(span, "points", strconv.Itoa(len(points)))
	return &measurev1.QueryResponse{DataPoints: points, Trace: tr.finish()}, nil
}

// gather asks every data node holding the groups of req for its points
// and returns them with copies removed, in the query's order: by time, or
// by the order tag of each group (orderTags) first. whole says the caller
// needs every point of the range (group by, aggregation, top N): a node
// answering the most a query may ask fails the query rather than leave
// points out. Under span (trace = true) each node's answer is traced.
func (s *MeasureService) gather(ctx context.Context, snap *schemaSnapshot, req *measurev1.QueryRequest,
	orderTags map[string][2]string, whole bool, span *commonv1.Span,
) ([]*measurev1.DataPoint, error) {
	type seriesTime struct {
		group string
		sid   uint64
		ts    int64
	}
	latest := map[seriesTime]*measurev1.DataPoint{}
	multi := len(req.GetGroups()) > 1
	if multi {
		if err := checkMeasureProjected(req, snap.measureDefs(req.GetGroups(), req.GetName())); err != nil {
			return nil, err
		}
	}
	for _, g := range req.GetGroups() {
		l := snap.measures[nameKey{Group: g, Name: req.GetName()}]
		if l == nil {
			return nil, status.Errorf(codes.NotFound, "measure %s/%s does not exist", g, req.GetName())
		}
		one := proto.CloneOf(req)
		one.Groups = []string{g}
		var fill func(*measurev1.DataPoint)
		if multi {
			fill = fitMeasure(one, l.schema)
		}
		if err := s.schema.withAnalyzers(g, req.GetName(), commonv1.Catalog_CATALOG_MEASURE, one.GetCriteria()); err != nil {
			return nil, err
		}
		replies, err := ask[measurev1.QueryResponse](ctx, s.query, queue.TopicMeasureQuery, g,
			&clusterv1.MeasureQuery{Request: one, Schema: l.schema, OrderTag: orderTags[g][1]}, span)
		if err != nil {
			return nil, err
		}
		for _, resp := range replies {
			if whole && len(resp.GetDataPoints()) >= int(schema.MaxQueryWindow) {
				return nil, status.Errorf(codes.InvalidArgument, "group_by/agg/top over more than %d data points of group %q on one data node; "+
					"narrow the time range or the criteria", schema.MaxQueryWindow, g)
			}
			for _, dp := range resp.GetDataPoints() {
				if fill != nil {
					fill(dp)
				}
				// A point is identified by its series and time; of two
				// copies the higher version wins, as in storage. An
				// index-mode measure keeps one row a series, the newest.
				k := seriesTime{g, dp.GetSid(), dp.GetTimestamp().AsTime().UnixNano()}
				if l.schema.GetIndexMode() {
					k.ts = 0
				}
				if prev, ok := latest[k]; !ok || newerPoint(dp, prev) {
					latest[k] = dp
				}
			}
		}
	}
	type keyed struct {
		k   seriesTime
		dp  *measurev1.DataPoint
		key *modelv1.TagValue // the order tag's value, when ordering by an index rule
	}
	all := make([]keyed, 0, len(latest))
	for k, dp := range latest {
		k.ts = dp.GetTimestamp().AsTime().UnixNano()
		kd := keyed{k: k, dp: dp}
		if ft, ok := orderTags[k.group]; ok {
			kd.key = pointTag(dp, ft[0], ft[1])
		}
		all = append(all, kd)
	}
	desc := req.GetOrderBy().GetSort() == modelv1.Sort_SORT_DESC
	byTime := timeOrder(desc)
	byKey := len(orderTags) > 0
	slices.SortFunc(all, func(a, b keyed) int {
		if byKey {
			c := schema.CompareTagKeys(a.key, b.key)
			if desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		if c := byTime(a.k.ts, b.k.ts); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.k.group, b.k.group), cmp.Compare(a.k.sid, b.k.sid))
	})
	out := make([]*measurev1.DataPoint, len(all))
	for i, k := range all {
		out[i] = k.dp
	}
	return out, nil
}

// measureDefs returns the schemas of measure name in groups, of the
// groups that have it.
func (s *schemaSnapshot) measureDefs(groups []string, name string) []*databasev1.Measure {
	defs := make([]*databasev1.Measure, 0, len(groups))
	for _, g := range groups {
		if l := s.measures[nameKey{Group: g, Name: name}]; l != nil {
			defs = append(defs, l.schema)
		}
	}
	return defs
}

// newerPoint says whether a point replaces prev, a copy of the same point
// (or, in an index-mode measure, a row of the same series): the later
// row, and of one time the higher version.
func newerPoint(dp, prev *measurev1.DataPoint) bool {
	if c := dp.GetTimestamp().AsTime().Compare(prev.GetTimestamp().AsTime()); c != 0 {
		return c > 0
	}
	return dp.GetVersion() > prev.GetVersion()
}
