package liaison

import (
	"time"

	"context"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/aggregate"
	"github.com/banyand-io/banyand/pkg/queue"
)

// parts returns the partial aggregates of every group req asks, each
// group's from its data nodes when its plan lets them answer
// (pushDown), else folded here from the points they ship.
func (s *MeasureService) parts(ctx context.Context, snap *schemaSnapshot, req *measurev1.QueryRequest, sh *shaping,
	tr *queryTrace,
) ([]part, error) {
	var out []part
	for _, g := range req.GetGroups() {
		l := snap.measures[nameKey{Group: g, Name: req.GetName()}]
		if l == nil {
			return nil, status.Errorf(codes.NotFound, "measure %s/%s does not exist", g, req.GetName())
		}
		one := sh.partialRequest(req)
		one.Groups = []string{g}
		if err := s.schema.withAnalyzers(g, req.GetName(), commonv1.Catalog_CATALOG_MEASURE, one.GetCriteria()); err != nil {
			return nil, err
		}
		span := tr.start("group %s: partial aggregates from the data nodes", g)
		got, ok, err := s.pushDown(ctx, l, one, tr, span)
		if err != nil {
			return nil, err
		}
		if ok {
			tr.end(span, "groups", strconv.Itoa(len(got)))
			out = append(out, got...)
			continue
		}
		tr.end(span, "answered", "no: points shipped instead")
		span = tr.start("group %s: ask the data nodes for points", g)
		ship := sh.nodeRequest(req)
		ship.Groups = []string{g}
		points, err := s.gather(ctx, snap, ship, nil, true, span)
		if err != nil {
			return nil, err
		}
		got = sh.fold(g, points)
		tr.end(span, "points", strconv.Itoa(len(points)), "groups", strconv.Itoa(len(got)))
		out = append(out, got...)
	}
	return out, nil
}

// partialRequest is what the data nodes are asked for partial aggregates
// of a shaped query: its range and criteria, the client's projections
// with the group-by tags and the aggregated and ranked fields, and the
// group_by, agg and top themselves; offset and limit apply once merged.
func (sh *shaping) partialRequest(req *measurev1.QueryRequest) *measurev1.QueryRequest {
	out := sh.nodeRequest(req)
	out.Offset, out.Limit = 0, 0
	if len(sh.groupBy) > 0 {
		out.GroupBy = &measurev1.QueryRequest_GroupBy{TagProjection: &modelv1.TagProjection{}}
		for _, ft := range sh.groupBy {
			out.GroupBy.TagProjection = projectTag(out.GroupBy.TagProjection, ft[0], ft[1])
		}
	}
	if sh.aggField != "" {
		out.Agg = &measurev1.QueryRequest_Aggregation{Function: sh.agg, FieldName: sh.aggField}
	}
	out.Top = sh.top
	return out
}

// pushDown asks the data nodes of req's one group for partial aggregates
// of the shards each answers for, when the group's plan allows it (ok):
// without a plan, or when a node turns out to hold points of a shard the
// plan did not know it holds (a holder record this liaison has not seen
// yet), or an answerer did not answer, the caller ships points instead.
func (s *MeasureService) pushDown(ctx context.Context, l *measureLayout, req *measurev1.QueryRequest,
	tr *queryTrace, span *commonv1.Span,
) (parts []part, ok bool, err error) {
	group := req.GetGroups()[0]
	asker, isAsker := s.query.queue.(queue.Asker)
	if s.query.answerers == nil || !isAsker {
		return nil, false, nil
	}
	plan, exact := s.query.answerers.Answerers(group)
	if !exact {
		return nil, false, nil
	}
	payload := func(node string) []byte {
		q := &clusterv1.MeasureQuery{Request: req, Schema: l.schema, Partial: &clusterv1.MeasurePartialPlan{
			ShardNum: l.shardNum, AllShards: plan.All, Shards: plan.ShardsOf(node),
		}}
		b, err := proto.Marshal(q)
		if err != nil {
			return nil // an empty query: the node refuses it as invalid
		}
		return b
	}
	replies, err := s.query.scatter(ctx, group, func(ctx context.Context) ([]queue.Reply, error) {
		return asker.Ask(ctx, queue.TopicMeasureQuery, group, payload)
	})
	if err != nil {
		return nil, false, err
	}
	answers, err := decodeReplies[clusterv1.MeasurePartials](replies, group, time.Time{}, nil)
	if err != nil {
		return nil, false, err
	}
	answered := map[string]bool{}
	for i, a := range answers {
		node := replies[i].Node
		answered[node] = true
		for _, sh := range a.GetShardsHeld() {
			if !plan.Knows(node, sh) {
				return nil, false, nil
			}
		}
	}
	for _, node := range plan.Answerer {
		if node != "" && !answered[node] {
			return nil, false, nil
		}
	}
	for i, a := range answers {
		child := tr.startUnder(span, "node %s: partial aggregates", replies[i].Node)
		tr.end(child, "shards", strconv.Itoa(len(plan.ShardsOf(replies[i].Node))),
			"points", strconv.FormatUint(a.GetPoints(), 10), "groups", strconv.Itoa(len(a.GetGroups())))
		for _, p := range a.GetGroups() {
			first := p.GetFirst()
			parts = append(parts, part{
				key: string(p.GetKey()), first: first, stats: aggregate.StatsOf(p),
				pos: aggregate.Position{Ts: first.GetTimestamp().AsTime().UnixNano(), Group: group, Sid: first.GetSid()},
			})
		}
	}
	return parts, true, nil
}
