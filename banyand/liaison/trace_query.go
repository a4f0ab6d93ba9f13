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
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/queue"
)

// tracePlan is one group of a trace query, resolved against its schema.
type tracePlan struct {
	group    string
	layout   *traceLayout
	orderTag string
}

type traceRef struct{ group, id string }

// Query implements TraceService.Query in two phases over the querier's
// scatter (complete or loud, docs/design/reads.md): every node that may
// hold a group names its first offset+limit traces with a matching span
// and their order keys; the liaison keeps each trace's best key, orders
// and pages them, then asks the same nodes for every span of the traces
// kept. A trace's spans are on its shard's nodes, and also on any node
// that took a copy re-placed while one of those was away: asking all of
// them in the second phase finds those too.
func (s *TraceService) Query(ctx context.Context, req *tracev1.QueryRequest) (*tracev1.QueryResponse, error) {
	plans, err := s.planTraceQuery(req)
	if err != nil {
		return nil, err
	}
	tr := newQueryTrace(req.GetTrace(), "trace query %v/%s", req.GetGroups(), req.GetName())
	desc := req.GetOrderBy().GetSort() == modelv1.Sort_SORT_DESC
	best := map[traceRef]*clusterv1.TraceKey{}
	for _, p := range plans {
		span := tr.start("group %s: select the traces", p.group)
		res, err := s.ask(ctx, p, req, nil, span)
		if err != nil {
			return nil, err
		}
		tr.end(span, "nodes", strconv.Itoa(len(res)))
		for _, res := range res {
			for _, k := range res.GetTraces() {
				ref := traceRef{p.group, k.GetTraceId()}
				if prev := best[ref]; prev == nil || schema.CompareTraceKeys(k, prev, desc) < 0 {
					best[ref] = k
				}
			}
		}
	}
	type ranked struct {
		ref traceRef
		key *clusterv1.TraceKey
	}
	order := make([]ranked, 0, len(best))
	for ref, k := range best {
		order = append(order, ranked{ref, k})
	}
	slices.SortFunc(order, func(a, b ranked) int {
		return cmp.Or(schema.CompareTraceKeys(a.key, b.key, desc), cmp.Compare(a.ref.group, b.ref.group))
	})
	order = page(order, req.GetOffset(), req.GetLimit(), schema.DefaultTraceLimit)

	spans := map[traceRef]map[spanRef]*clusterv1.StoredSpan{}
	size := 0
	for _, p := range plans {
		var ids []string
		for _, r := range order {
			if r.ref.group == p.group {
				ids = append(ids, r.ref.id)
			}
		}
		if len(ids) == 0 {
			continue
		}
		span := tr.start("group %s: read the spans of %d traces", p.group, len(ids))
		res, err := s.ask(ctx, p, req, ids, span)
		if err != nil {
			return nil, err
		}
		tr.end(span, "nodes", strconv.Itoa(len(res)))
		for _, res := range res {
			for _, sp := range res.GetSpans() {
				ref := traceRef{p.group, sp.GetTraceId()}
				if spans[ref] == nil {
					spans[ref] = map[spanRef]*clusterv1.StoredSpan{}
				}
				// A replica or a re-placed copy answers the same span
				// again: the highest version is the one.
				k := spanRef{sp.GetSpanId(), sp.GetTimestamp()}
				if prev := spans[ref][k]; prev == nil || sp.GetVersion() > prev.GetVersion() {
					if prev == nil {
						if size += len(sp.GetSpan()); size > schema.MaxTraceReplyBytes {
							return nil, status.Errorf(codes.ResourceExhausted, "the spans of the %d traces asked for are over %d bytes: ask for fewer (limit)", len(order), schema.MaxTraceReplyBytes)
						}
					}
					spans[ref][k] = sp
				}
			}
		}
	}
	merge := tr.start("merge: copies removed, spans in time order")
	resp := &tracev1.QueryResponse{Traces: make([]*tracev1.Trace, 0, len(order))}
	for _, r := range order {
		got := spans[r.ref]
		if len(got) == 0 {
			continue // gone since the first phase (retention)
		}
		list := make([]*clusterv1.StoredSpan, 0, len(got))
		for _, sp := range got {
			list = append(list, sp)
		}
		slices.SortFunc(list, func(a, b *clusterv1.StoredSpan) int {
			return cmp.Or(cmp.Compare(a.GetTimestamp(), b.GetTimestamp()), cmp.Compare(a.GetSpanId(), b.GetSpanId()))
		})
		t := &tracev1.Trace{TraceId: r.ref.id, Spans: make([]*tracev1.Span, len(list))}
		for i, sp := range list {
			t.Spans[i] = &tracev1.Span{Tags: sp.GetTags(), Span: sp.GetSpan(), SpanId: sp.GetSpanId()}
		}
		resp.Traces = append(resp.Traces, t)
	}
	tr.end(merge, "traces", strconv.Itoa(len(resp.Traces)))
	resp.TraceQueryResult = tr.finish()
	return resp, nil
}

type spanRef struct {
	id string
	ts int64
}

// ask scatters one phase of a trace query to the nodes of p's group.
func (s *TraceService) ask(ctx context.Context, p tracePlan, req *tracev1.QueryRequest, ids []string,
	span *commonv1.Span,
) ([]*clusterv1.TraceQueryResult, error) {
	one := proto.CloneOf(req)
	one.Groups = []string{p.group}
	if err := s.schema.withAnalyzers(p.group, req.GetName(), commonv1.Catalog_CATALOG_TRACE, one.GetCriteria()); err != nil {
		return nil, err
	}
	return ask[clusterv1.TraceQueryResult](ctx, s.query, queue.TopicTraceQuery, p.group,
		&clusterv1.TraceQuery{Request: one, Schema: p.layout.schema, OrderTag: p.orderTag, TraceIds: ids}, span)
}

// planTraceQuery checks a trace query before any node is asked: groups
// and name, the time range when there is one, the window, the criteria's
// operators and tags, the projection and the order.
func (s *TraceService) planTraceQuery(req *tracev1.QueryRequest) ([]tracePlan, error) {
	if err := schema.CheckQueryWindow(req.GetOffset(), req.GetLimit()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	switch tr := req.GetTimeRange(); {
	case len(req.GetGroups()) == 0:
		return nil, status.Error(codes.InvalidArgument, "groups: at least one group is required")
	case req.GetName() == "":
		return nil, status.Error(codes.InvalidArgument, "name is required")
	case tr != nil && (tr.GetBegin() == nil || tr.GetEnd() == nil):
		return nil, status.Error(codes.InvalidArgument, "time_range: begin and end are required when a time range is given")
	case tr != nil && (!queryTime(tr.GetBegin()) || !queryTime(tr.GetEnd())):
		return nil, status.Errorf(codes.InvalidArgument, "time_range: begin and end must be whole milliseconds within %s..%s", minTime, maxTime)
	}
	if err := checkCriteria(req.GetCriteria(), 0); err != nil {
		return nil, err
	}
	snap := s.schema.snapshot()
	var plans []tracePlan
	for _, g := range slices.Compact(slices.Sorted(slices.Values(req.GetGroups()))) {
		l := snap.traces[nameKey{Group: g, Name: req.GetName()}]
		if l == nil {
			if grp := snap.src.Groups[g]; grp != nil && grp.GetCatalog() != commonv1.Catalog_CATALOG_TRACE {
				return nil, status.Errorf(codes.FailedPrecondition, "group %s is a %s group: it holds no traces", g, grp.GetCatalog())
			}
			return nil, status.Errorf(codes.NotFound, "trace %s/%s does not exist", g, req.GetName())
		}
		declared := func(tag string) bool {
			return slices.ContainsFunc(l.schema.GetTags(), func(t *databasev1.TraceTagSpec) bool { return t.GetName() == tag })
		}
		for _, tag := range criteriaTags(req.GetCriteria(), nil) {
			if !declared(tag) {
				return nil, status.Errorf(codes.InvalidArgument, "criteria: tag %q is not a tag of trace %s/%s", tag, g, req.GetName())
			}
		}
		for _, tag := range req.GetTagProjection() {
			if !declared(tag) {
				return nil, status.Errorf(codes.InvalidArgument, "tag_projection: tag %q is not a tag of trace %s/%s", tag, g, req.GetName())
			}
		}
		orderTag, err := traceOrderTag(snap.src, l, req.GetOrderBy().GetIndexRuleName())
		if err != nil {
			return nil, err
		}
		plans = append(plans, tracePlan{group: g, layout: l, orderTag: orderTag})
	}
	return plans, nil
}

// traceOrderTag resolves order_by.index_rule_name to the tag traces are
// ordered by: the timestamp tag when empty; else the tag of the group's
// index rule of that name (its last tag: OAP's trace index rules list
// their filter tags first and the order tag last), or the trace's tag of
// that name. It must be an int or timestamp tag.
func traceOrderTag(snap *schema.Snapshot, l *traceLayout, rule string) (string, error) {
	if rule == "" {
		return l.schema.GetTimestampTagName(), nil
	}
	tag := rule
	if ir := snap.IndexRules[nameKey{Group: l.group, Name: rule}]; ir != nil && len(ir.GetTags()) > 0 {
		tag = ir.GetTags()[len(ir.GetTags())-1]
	}
	for _, t := range l.schema.GetTags() {
		if t.GetName() != tag {
			continue
		}
		switch t.GetType() {
		case databasev1.TagType_TAG_TYPE_INT, databasev1.TagType_TAG_TYPE_TIMESTAMP:
			return tag, nil
		}
		return "", status.Errorf(codes.InvalidArgument, "order_by: tag %q of trace %s/%s is %v: traces order by an int or timestamp tag", tag, l.group, l.name, t.GetType())
	}
	return "", status.Errorf(codes.InvalidArgument, "order_by: %q is neither an index rule nor a tag of trace %s/%s", rule, l.group, l.name)
}
