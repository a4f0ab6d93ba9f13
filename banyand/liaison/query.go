package liaison

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/elementid"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/wire"
)

// querier scatters a query to every data node of a group and merges the
// answers. Each node returns at most offset+limit results in order; the
// liaison merges, removes the copies replicas and redeliveries produce,
// orders by time and applies offset and limit.
//
// A query answers OK only when every node that holds data of the group
// answered: the live ones are asked, and one that holds data but is not in
// the node table (holders) fails the query with UNAVAILABLE naming it and
// its shards, unless the operator allowed partial answers.
type querier struct {
	logger       *slog.Logger
	schema       *layouts
	queue        queue.Client
	holders      DataHolders
	answerers    ShardAnswerers // nil: points are shipped to the liaison
	allowPartial bool
	partial      Counter
	topNRankings bool // TopN reads the data nodes' rankings (Deps.TopNRankings)
}

func checkQuery(groups []string, name string, tr *modelv1.TimeRange, criteria *modelv1.Criteria, offset, limit uint32) error {
	if err := schema.CheckQueryWindow(offset, limit); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	switch {
	case len(groups) == 0:
		return status.Error(codes.InvalidArgument, "groups: at least one group is required")
	case name == "":
		return status.Error(codes.InvalidArgument, "name is required")
	case tr.GetBegin() == nil || tr.GetEnd() == nil:
		return status.Error(codes.InvalidArgument, "time_range: begin and end are required")
	case !queryTime(tr.GetBegin()) || !queryTime(tr.GetEnd()):
		// Beyond these a time's UnixNano overflows: the query would
		// silently read another range.
		return status.Errorf(codes.InvalidArgument, "time_range: begin and end must be whole milliseconds within %s..%s", minTime, maxTime)
	}
	return checkCriteria(criteria, 0)
}

// queryTime is BanyanDB's check of a query bound: the same as a write's
// timestamp (see checkTimestamp). The range holds both its ends, so a
// range whose begin is its end is one point in time; one that ends before
// it begins holds nothing.
func queryTime(ts *timestamppb.Timestamp) bool {
	ns, ok := wire.UnixNano(ts.GetSeconds(), ts.GetNanos())
	return ok && ns%int64(time.Millisecond) == 0
}

// scatter sends a query to every node holding group (send: a broadcast,
// or a request of its own to each) and returns their replies. A node that
// cannot answer fails the query: a partial answer would silently hide
// acknowledged writes.
func (q *querier) scatter(ctx context.Context, group string, send func(context.Context) ([]queue.Reply, error)) ([]queue.Reply, error) {
	// Checked before asking (fail fast on a node known to be away) and
	// again against the nodes that answered: the node table the broadcast
	// read may be newer than the one checked, without a holder in it.
	partial := false
	if err := q.checkHolders(group, nil, &partial); err != nil {
		return nil, err
	}
	replies, err := send(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "query group %q: %v", group, err)
	}
	for _, r := range replies {
		if r.Err != nil {
			code := codes.Unavailable
			switch {
			case errors.Is(r.Err, queue.ErrInvalidMessage):
				code = codes.InvalidArgument
			case errors.Is(r.Err, queue.ErrResourceExhausted):
				code = codes.ResourceExhausted
			}
			return nil, status.Errorf(code, "query group %q on node %s: %v", group, r.Node, r.Err)
		}
	}
	answered := make(map[string]bool, len(replies))
	for _, r := range replies {
		answered[r.Node] = true
	}
	if err := q.checkHolders(group, answered, &partial); err != nil {
		return nil, err
	}
	return replies, nil
}

// ask encodes query, scatters it to the nodes holding group (scatter) and
// decodes each node's answer as an R. Under a span (a query asked with
// trace = true) each node that answered gets a span of its own there,
// holding the stages the node traced.
func ask[R any, PR interface {
	*R
	proto.Message
}](ctx context.Context, q *querier, topic queue.Topic, group string, query proto.Message, under *commonv1.Span) ([]*R, error) {
	payload, err := proto.Marshal(query)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode query: %v", err)
	}
	start := time.Now()
	replies, err := q.scatter(ctx, group, func(ctx context.Context) ([]queue.Reply, error) {
		return q.queue.Broadcast(ctx, topic, group, payload)
	})
	if err != nil {
		return nil, err
	}
	return decodeReplies[R, PR](replies, group, start, under)
}

// decodeReplies decodes each node's answer as an R; under a span, it
// adds each node's span there (asked at start) with the stages the node
// traced.
func decodeReplies[R any, PR interface {
	*R
	proto.Message
}](replies []queue.Reply, group string, start time.Time, under *commonv1.Span) ([]*R, error) {
	out := make([]*R, len(replies))
	for i, r := range replies {
		out[i] = new(R)
		if err := proto.Unmarshal(r.Payload, PR(out[i])); err != nil {
			return nil, status.Errorf(codes.Internal, "decode a data node's answer: %v", err)
		}
		if under != nil {
			var stages *commonv1.Trace
			if t, ok := any(PR(out[i])).(interface{ GetTrace() *commonv1.Trace }); ok {
				stages = t.GetTrace()
			}
			attachNode(under, group, r.Node, start, stages)
		}
	}
	return out, nil
}

// checkHolders fails the query of group if a node holding its data is
// not reachable (answered: see DataHolders), unless partial answers are
// allowed: then it counts the query once (partial says it was) and lets
// it go on.
func (q *querier) checkHolders(group string, answered map[string]bool, partial *bool) error {
	if q.holders == nil {
		return nil
	}
	away := q.holders.Unreachable(group, answered)
	if len(away) == 0 {
		return nil
	}
	if !q.allowPartial {
		return status.Errorf(codes.Unavailable, "query group %q: data node(s) %v hold data of it and are not available; "+
			"the answer would miss their acknowledged writes", group, away)
	}
	if !*partial {
		*partial = true
		q.partial.Inc()
		q.logger.Warn("partial query answer: holders unreachable", "group", group, "unreachable", fmt.Sprint(away))
	}
	return nil
}

// page applies offset and limit to merged, ordered results.
func page[T any](items []T, offset, limit, defaultLimit uint32) []T {
	if limit == 0 {
		limit = defaultLimit
	}
	if uint64(offset) >= uint64(len(items)) {
		return nil
	}
	items = items[offset:]
	return items[:min(uint64(limit), uint64(len(items)))]
}

func timeOrder(desc bool) func(a, b int64) int {
	if desc {
		return func(a, b int64) int { return cmp.Compare(b, a) }
	}
	return cmp.Compare[int64]
}

// Query implements StreamService.Query.
func (s *StreamService) Query(ctx context.Context, req *streamv1.QueryRequest) (*streamv1.QueryResponse, error) {
	if err := checkQuery(req.GetGroups(), req.GetName(), req.GetTimeRange(), req.GetCriteria(), req.GetOffset(), req.GetLimit()); err != nil {
		return nil, err
	}
	snap := s.schema.snapshot()
	tr := newQueryTrace(req.GetTrace(), "stream query %v/%s", req.GetGroups(), req.GetName())
	type keyed struct {
		group, series string
		ts            int64
		version       int64
		el            *streamv1.Element
		key           *modelv1.TagValue // the order tag's value, when ordering by an index rule
	}
	// An element is identified by its group, series, timestamp and id. A
	// replica or a redelivered write shows up once per copy, and an element
	// re-placed on another node while its own was away may be on two nodes
	// in two versions: the highest version (the later write) is the one.
	type elementKey struct {
		group, series, id string
		ts                int64
	}
	latest := map[elementKey]int{} // index into all
	var all []keyed
	multi := len(req.GetGroups()) > 1
	if multi {
		var fams [][]*databasev1.TagFamilySpec
		for _, g := range req.GetGroups() {
			if l := snap.streams[nameKey{Group: g, Name: req.GetName()}]; l != nil {
				fams = append(fams, l.schema.GetTagFamilies())
			}
		}
		if err := checkProjected(req.GetProjection(), fams); err != nil {
			return nil, err
		}
	}
	for _, g := range req.GetGroups() {
		l := snap.streams[nameKey{Group: g, Name: req.GetName()}]
		if l == nil {
			return nil, status.Errorf(codes.NotFound, "stream %s/%s does not exist", g, req.GetName())
		}
		one := proto.CloneOf(req)
		one.Groups = []string{g}
		var fill func(*streamv1.Element)
		if multi {
			fill = fitStream(one, l.schema)
		}
		if err := s.schema.withAnalyzers(g, req.GetName(), commonv1.Catalog_CATALOG_STREAM, one.GetCriteria()); err != nil {
			return nil, err
		}
		sq := &clusterv1.StreamQuery{Request: one, Schema: l.schema}
		if rule := req.GetOrderBy().GetIndexRuleName(); rule != "" {
			tag, err := s.schema.orderTag(g, req.GetName(), commonv1.Catalog_CATALOG_STREAM, rule)
			if err != nil {
				return nil, err
			}
			sq.OrderTag = tag
		}
		span := tr.start("group %s: ask the data nodes", g)
		replies, err := ask[clusterv1.StreamQueryResult](ctx, s.query, queue.TopicStreamQuery, g, sq, span)
		if err != nil {
			return nil, err
		}
		before := len(all)
		for _, res := range replies {
			els, keys, versions, orderKeys := res.GetElements(), res.GetSeriesKeys(), res.GetVersions(), res.GetOrderKeys()
			if len(keys) != len(els) || len(versions) != len(els) || (sq.OrderTag != "" && len(orderKeys) != len(els)) {
				return nil, status.Errorf(codes.Internal, "a data node's answer has %d elements, %d series keys, %d versions and %d order keys",
					len(els), len(keys), len(versions), len(orderKeys))
			}
			for i, el := range els {
				if fill != nil {
					fill(el)
				}
				ts := el.GetTimestamp().AsTime().UnixNano()
				kd := keyed{group: g, series: string(keys[i]), ts: ts, version: versions[i], el: el}
				if sq.OrderTag != "" {
					kd.key = orderKeys[i]
				}
				k := elementKey{group: g, series: kd.series, id: el.GetElementId(), ts: ts}
				if j, ok := latest[k]; ok {
					if versions[i] > all[j].version {
						all[j] = kd
					}
					continue
				}
				latest[k] = len(all)
				all = append(all, kd)
			}
		}
		tr.end(span, "nodes", strconv.Itoa(len(replies)), "elements", strconv.Itoa(len(all)-before))
	}
	merge := tr.start("merge: copies removed, ordered, one element an id, offset and limit")
	desc := req.GetOrderBy().GetSort() == modelv1.Sort_SORT_DESC
	byTime := timeOrder(desc)
	byKey := req.GetOrderBy().GetIndexRuleName() != ""
	slices.SortStableFunc(all, func(a, b keyed) int {
		if byKey {
			c := schema.CompareTagKeys(a.key, b.key)
			if desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		if c := byTime(a.ts, b.ts); c != 0 {
			return c
		}
		return cmp.Compare(a.el.GetElementId(), b.el.GetElementId())
	})
	// As BanyanDB, an element id names one element of a stream in a
	// group: of elements written with the same id (another time, another
	// series) the answer keeps the first in its order. Elements written
	// without an id are each their own (BanyanDB generates one). The
	// answered id hashes group, name and written id, so keeping one
	// element a written id of a group keeps one an answered id, as
	// BanyanDB does.
	type groupID struct{ group, id string }
	seen := make(map[groupID]bool, len(all))
	all = slices.DeleteFunc(all, func(k keyed) bool {
		id := groupID{k.group, k.el.GetElementId()}
		if id.id == "" {
			return false
		}
		if seen[id] {
			return true
		}
		seen[id] = true
		return false
	})
	all = page(all, req.GetOffset(), req.GetLimit(), schema.DefaultStreamLimit)
	resp := &streamv1.QueryResponse{Elements: make([]*streamv1.Element, len(all))}
	for i, k := range all {
		k.el.ElementId = answeredID(k.group, req.GetName(), k.series, k.ts, k.el.GetElementId())
		resp.Elements[i] = k.el
	}
	tr.end(merge, "elements", strconv.Itoa(len(resp.Elements)))
	resp.Trace = tr.finish()
	return resp, nil
}

// answeredID is the element id in BanyanDB's form (see pkg/elementid);
// storage and the merge above keep the id as written.
func answeredID(group, name, series string, ts int64, written string) string {
	if written == "" {
		return elementid.Unnamed(group, name, series, ts)
	}
	return elementid.Of(group, name, written)
}

// maxCriteriaDepth bounds how deeply a query's criteria may nest; real
// queries are a handful of levels, a hostile one could be thousands.
const maxCriteriaDepth = 64

// checkCriteria refuses what the data nodes cannot evaluate before any of
// them is asked: unsupported operators are Unimplemented, malformed trees
// InvalidArgument.
func checkCriteria(c *modelv1.Criteria, depth int) error {
	if c == nil {
		return nil
	}
	if depth > maxCriteriaDepth {
		return status.Errorf(codes.InvalidArgument, "criteria: nested deeper than %d levels", maxCriteriaDepth)
	}
	switch e := c.GetExp().(type) {
	case *modelv1.Criteria_Condition:
		cond := e.Condition
		if cond.GetName() == "" {
			return status.Error(codes.InvalidArgument, "criteria: a condition names no tag")
		}
		switch cond.GetOp() {
		case modelv1.Condition_BINARY_OP_EQ, modelv1.Condition_BINARY_OP_NE,
			modelv1.Condition_BINARY_OP_LT, modelv1.Condition_BINARY_OP_GT,
			modelv1.Condition_BINARY_OP_LE, modelv1.Condition_BINARY_OP_GE,
			modelv1.Condition_BINARY_OP_IN, modelv1.Condition_BINARY_OP_NOT_IN,
			modelv1.Condition_BINARY_OP_HAVING, modelv1.Condition_BINARY_OP_NOT_HAVING,
			modelv1.Condition_BINARY_OP_MATCH:
			return nil
		case modelv1.Condition_BINARY_OP_UNSPECIFIED:
			return status.Errorf(codes.InvalidArgument, "criteria: condition on %q has no operator", cond.GetName())
		default:
			return status.Errorf(codes.Unimplemented, "criteria: operator %s is not supported (only EQ, NE, LT, GT, LE, GE, IN, NOT_IN, HAVING, NOT_HAVING, MATCH)", cond.GetOp())
		}
	case *modelv1.Criteria_Le:
		switch e.Le.GetOp() {
		case modelv1.LogicalExpression_LOGICAL_OP_AND, modelv1.LogicalExpression_LOGICAL_OP_OR:
		default:
			return status.Error(codes.InvalidArgument, "criteria: logical expression has no operator")
		}
		if err := checkCriteria(e.Le.GetLeft(), depth+1); err != nil {
			return err
		}
		return checkCriteria(e.Le.GetRight(), depth+1)
	}
	return status.Error(codes.InvalidArgument, "criteria: empty")
}
