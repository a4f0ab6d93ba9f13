package liaison

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// propertyKind labels property writes in the write counters.
const propertyKind = "property"

// PropertyService serves banyandb.property.v1.PropertyService
// (docs/design/properties.md). Apply and Delete publish one
// cluster.v1.PropertyWrite a property to the data nodes of its shard,
// stamped with a revision from this liaison's clock; the data nodes keep
// the highest revision and merge into the record they hold. Both answer
// once every copy is durable. Reads ask every node that may hold the
// group (the stream and measure queries' complete-or-loud rule) and keep
// the highest revision of each property.
type PropertyService struct {
	propertyv1.UnimplementedPropertyServiceServer
	w     *writer
	query *querier
	clock *revisionClock
}

func newPropertyService(w *writer, q *querier) *PropertyService {
	return &PropertyService{w: w, query: q, clock: w.versions}
}

type propertyID struct{ group, name, id string }

func keyOf(p *propertyv1.Property) propertyID {
	return propertyID{p.GetMetadata().GetGroup(), p.GetMetadata().GetName(), p.GetId()}
}

// Apply implements PropertyService.Apply.
func (s *PropertyService) Apply(ctx context.Context, req *propertyv1.ApplyRequest) (*propertyv1.ApplyResponse, error) {
	done := s.count(req.GetProperty().GetMetadata().GetGroup())
	resp, err := s.apply(ctx, req)
	done(err)
	return resp, err
}

func (s *PropertyService) apply(ctx context.Context, req *propertyv1.ApplyRequest) (*propertyv1.ApplyResponse, error) {
	p := req.GetProperty()
	md := p.GetMetadata()
	switch {
	case p == nil:
		return nil, status.Error(codes.InvalidArgument, "property is required")
	case md.GetGroup() == "":
		return nil, status.Error(codes.InvalidArgument, "property.metadata.group is required")
	case md.GetName() == "":
		return nil, status.Error(codes.InvalidArgument, "property.metadata.name is required")
	case p.GetId() == "":
		return nil, status.Error(codes.InvalidArgument, "property.id is required")
	case len(p.GetTags()) == 0:
		return nil, status.Error(codes.InvalidArgument, "property.tags: at least one tag is required")
	}
	if _, ok := propertyv1.ApplyRequest_Strategy_name[int32(req.GetStrategy())]; !ok {
		return nil, status.Errorf(codes.InvalidArgument, "strategy %d is not a strategy", req.GetStrategy())
	}
	g, sch, err := s.lookup(md.GetGroup(), md.GetName())
	if err != nil {
		return nil, err
	}
	if err := checkPropertyTags(sch, p.GetTags()); err != nil {
		return nil, err
	}
	found, err := s.collect(ctx, md.GetGroup(), &propertyv1.QueryRequest{Name: md.GetName(), Ids: []string{p.GetId()}, Limit: 1}, []*databasev1.Property{sch}, nil)
	if err != nil {
		return nil, err
	}
	prev := found[keyOf(p)]
	w := &clusterv1.PropertyWrite{
		Strategy: req.GetStrategy(),
		Property: &propertyv1.Property{
			Metadata: &commonv1.Metadata{Group: md.GetGroup(), Name: md.GetName()},
			Id:       p.GetId(), Tags: p.GetTags(),
		},
	}
	if err := s.publish(ctx, g, prev, w); err != nil {
		return nil, err
	}
	// What the data nodes made of it from the record read before: the
	// answer BanyanDB gives (a concurrent Apply of the same property may
	// have changed the base since; the stored result is still the rule's).
	res, _ := schema.ApplyProperty(prev, w)
	return &propertyv1.ApplyResponse{
		Created: prev == nil || prev.GetDeleted(),
		TagsNum: uint32(min(len(res.GetProperty().GetTags()), math.MaxUint32)),
	}, nil
}

// publish stamps w with a revision above prev's and this liaison's last,
// publishes it to the shard of its property and waits until every copy
// is durable.
func (s *PropertyService) publish(ctx context.Context, g *commonv1.Group, prev *clusterv1.StoredProperty, w *clusterv1.PropertyWrite) error {
	p := w.GetProperty()
	now := s.w.now()
	p.Metadata.ModRevision = s.clock.next(schema.Revision(prev.GetProperty()))
	p.UpdatedAt = timestamppb.New(now)
	sk, err := schema.PropertySeriesKey(nil, p.GetMetadata().GetName(), p.GetId())
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "property %s/%s/%s: %v", p.GetMetadata().GetGroup(), p.GetMetadata().GetName(), p.GetId(), err)
	}
	shard, err := route.ShardID(sk, g.GetResourceOpts().GetShardNum())
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "group %q: %v", g.GetMetadata().GetName(), err)
	}
	w.SeriesKey, w.ShardId = sk, shard
	if prev != nil {
		w.Base = prev
		if w.GetDelete() || w.GetStrategy() == propertyv1.ApplyRequest_STRATEGY_REPLACE {
			// Only its revisions matter then.
			w.Base = &clusterv1.StoredProperty{Property: &propertyv1.Property{Metadata: prev.GetProperty().GetMetadata(), Id: prev.GetProperty().GetId()}, Deleted: prev.GetDeleted()}
		}
	}
	payload, err := proto.Marshal(w)
	if err != nil {
		return status.Errorf(codes.Internal, "encode property write: %v", err)
	}
	pub := s.w.queue.NewBatchPublisher(s.w.cfg.AckTimeout)
	defer func() { _ = pub.Close() }()
	f, err := pub.Publish(ctx, queue.TopicPropertyWrite, queue.Message{Group: p.GetMetadata().GetGroup(), Shard: shard, Payload: payload})
	if err == nil {
		err = f.Get(ctx)
	}
	if err != nil {
		code := codes.Unavailable
		switch {
		case errors.Is(err, queue.ErrInvalidMessage):
			code = codes.Internal // the liaison built it: not the client's doing
		case errors.Is(err, queue.ErrDeadline), errors.Is(err, context.DeadlineExceeded):
			code = codes.DeadlineExceeded
		case errors.Is(err, context.Canceled):
			code = codes.Canceled
		}
		return status.Errorf(code, "property %s/%s/%s not stored durably: %v", p.GetMetadata().GetGroup(), p.GetMetadata().GetName(), p.GetId(), err)
	}
	return nil
}

// Delete implements PropertyService.Delete: one property, or every
// property of the name when id is empty. Each live one gets a tombstone
// with a revision above its own; deleted is false when none was live.
func (s *PropertyService) Delete(ctx context.Context, req *propertyv1.DeleteRequest) (*propertyv1.DeleteResponse, error) {
	done := s.count(req.GetGroup())
	resp, err := s.delete(ctx, req)
	done(err)
	return resp, err
}

func (s *PropertyService) delete(ctx context.Context, req *propertyv1.DeleteRequest) (*propertyv1.DeleteResponse, error) {
	switch {
	case req.GetGroup() == "":
		return nil, status.Error(codes.InvalidArgument, "group is required")
	case req.GetName() == "":
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	g, sch, err := s.lookup(req.GetGroup(), req.GetName())
	if err != nil {
		return nil, err
	}
	q := &propertyv1.QueryRequest{Name: req.GetName(), Limit: math.MaxUint32}
	if req.GetId() != "" {
		q.Ids = []string{req.GetId()}
	}
	found, err := s.collect(ctx, req.GetGroup(), q, []*databasev1.Property{sch}, nil)
	if err != nil {
		return nil, err
	}
	deleted := false
	for _, sp := range sortedStored(found) {
		if sp.GetDeleted() {
			continue
		}
		w := &clusterv1.PropertyWrite{
			Delete: true,
			Property: &propertyv1.Property{
				Metadata: &commonv1.Metadata{Group: req.GetGroup(), Name: req.GetName()},
				Id:       sp.GetProperty().GetId(),
			},
		}
		if err := s.publish(ctx, g, sp, w); err != nil {
			return nil, err
		}
		deleted = true
	}
	return &propertyv1.DeleteResponse{Deleted: deleted}, nil
}

// Query implements PropertyService.Query.
func (s *PropertyService) Query(ctx context.Context, req *propertyv1.QueryRequest) (*propertyv1.QueryResponse, error) {
	if len(req.GetGroups()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "groups: at least one group is required")
	}
	if err := checkCriteria(req.GetCriteria(), 0); err != nil {
		return nil, err
	}
	type groupQuery struct {
		group   string
		schemas []*databasev1.Property
	}
	var queries []groupQuery
	for _, gn := range slices.Compact(slices.Sorted(slices.Values(req.GetGroups()))) {
		schemas, err := s.schemasOf(gn, req.GetName())
		if err != nil {
			return nil, err
		}
		if err := checkPropertyQueryTags(req, schemas); err != nil {
			return nil, err
		}
		queries = append(queries, groupQuery{gn, schemas})
	}
	tr := newQueryTrace(req.GetTrace(), "property query %v/%s", req.GetGroups(), req.GetName())
	all := map[propertyID]*clusterv1.StoredProperty{}
	for _, gq := range queries {
		if len(gq.schemas) == 0 {
			continue
		}
		span := tr.start("group %s: ask the data nodes", gq.group)
		found, err := s.collect(ctx, gq.group, req, gq.schemas, span)
		if err != nil {
			return nil, err
		}
		tr.end(span, "properties", strconv.Itoa(len(found)))
		for k, sp := range found {
			all[k] = sp
		}
	}
	type hit struct {
		order *modelv1.TagValue
		sp    *clusterv1.StoredProperty
	}
	hits := make([]hit, 0, len(all))
	orderTag := req.GetOrderBy().GetTagName()
	for _, sp := range all {
		if sp.GetDeleted() {
			continue
		}
		h := hit{sp: sp}
		if orderTag != "" {
			h.order = tagValue(sp.GetProperty().GetTags(), orderTag)
		}
		hits = append(hits, h)
	}
	merge := tr.start("merge: highest revisions, ordered, limit")
	schema.SortProperties(hits, func(h hit) (*modelv1.TagValue, *clusterv1.StoredProperty) { return h.order, h.sp },
		req.GetOrderBy().GetSort() == modelv1.Sort_SORT_DESC)
	hits = page(hits, 0, req.GetLimit(), schema.DefaultPropertyLimit)
	resp := &propertyv1.QueryResponse{Properties: make([]*propertyv1.Property, len(hits))}
	for i, h := range hits {
		p := h.sp.GetProperty()
		if proj := req.GetTagProjection(); len(proj) > 0 {
			p.Tags = slices.DeleteFunc(p.Tags, func(t *modelv1.Tag) bool { return !slices.Contains(proj, t.GetKey()) })
		}
		resp.Properties[i] = p
	}
	tr.end(merge, "properties", strconv.Itoa(len(resp.Properties)))
	resp.Trace = tr.finish()
	return resp, nil
}

// collect asks every node that may hold group for req's properties and
// keeps the highest revision of each, tombstones included; under span
// (trace = true) each node's answer is traced.
func (s *PropertyService) collect(ctx context.Context, group string, req *propertyv1.QueryRequest, schemas []*databasev1.Property,
	span *commonv1.Span,
) (map[propertyID]*clusterv1.StoredProperty, error) {
	one := proto.CloneOf(req)
	one.Groups = []string{group}
	one.TagProjection = nil // the liaison projects once it has ordered
	replies, err := ask[clusterv1.PropertyQueryResult](ctx, s.query, queue.TopicPropertyQuery, group,
		&clusterv1.PropertyQuery{Request: one, Schemas: schemas}, span)
	if err != nil {
		return nil, err
	}
	out := map[propertyID]*clusterv1.StoredProperty{}
	for _, res := range replies {
		for _, sp := range res.GetProperties() {
			k := keyOf(sp.GetProperty())
			if prev, ok := out[k]; !ok || schema.Revision(sp.GetProperty()) > schema.Revision(prev.GetProperty()) {
				out[k] = sp
			}
		}
	}
	return out, nil
}

// lookup returns the property group and the property schema of (group,
// name), or the status BanyanDB answers when there is none.
func (s *PropertyService) lookup(group, name string) (*commonv1.Group, *databasev1.Property, error) {
	snap := s.w.schema.snapshot().src
	g, err := propertyGroup(snap, group)
	if err != nil {
		return nil, nil, err
	}
	sch := snap.Properties[nameKey{Group: group, Name: name}]
	if sch == nil {
		return nil, nil, status.Errorf(codes.NotFound, "property %s/%s does not exist", group, name)
	}
	return g, sch, nil
}

// schemasOf returns the property schema a query of (group, name) reads:
// the named one, or every one of the group when name is empty.
func (s *PropertyService) schemasOf(group, name string) ([]*databasev1.Property, error) {
	if name != "" {
		_, sch, err := s.lookup(group, name)
		if err != nil {
			return nil, err
		}
		return []*databasev1.Property{sch}, nil
	}
	snap := s.w.schema.snapshot().src
	if _, err := propertyGroup(snap, group); err != nil {
		return nil, err
	}
	var out []*databasev1.Property
	for k, p := range snap.Properties {
		if k.Group == group {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *databasev1.Property) int {
		return cmp.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	return out, nil
}

func propertyGroup(snap *schema.Snapshot, group string) (*commonv1.Group, error) {
	g := snap.Groups[group]
	switch {
	case g == nil:
		return nil, status.Errorf(codes.NotFound, "group %s does not exist", group)
	case g.GetCatalog() != commonv1.Catalog_CATALOG_PROPERTY:
		return nil, status.Errorf(codes.FailedPrecondition, "group %s is a %s group: it cannot hold properties", group, g.GetCatalog())
	case g.GetResourceOpts().GetShardNum() == 0:
		return nil, status.Errorf(codes.FailedPrecondition, "group %s has no shard_num", group)
	}
	return g, nil
}

// checkPropertyTags is the tag rule of a property write: every tag
// declared by its schema, once, with a value of the declared type (a
// null fits any).
func checkPropertyTags(sch *databasev1.Property, tags []*modelv1.Tag) error {
	name := sch.GetMetadata().GetGroup() + "/" + sch.GetMetadata().GetName()
	for i, t := range tags {
		spec := tagSpec(sch, t.GetKey())
		if spec == nil {
			return status.Errorf(codes.InvalidArgument, "tag %q is not declared by property %s", t.GetKey(), name)
		}
		if slices.ContainsFunc(tags[:i], func(o *modelv1.Tag) bool { return o.GetKey() == t.GetKey() }) {
			return status.Errorf(codes.InvalidArgument, "tag %q is sent twice", t.GetKey())
		}
		k := schema.TagValueKind(t.GetValue())
		if !k.IsNull() && k != tagKinds[spec.GetType()] {
			return status.Errorf(codes.InvalidArgument, "tag %q of property %s: a %s value does not fit %s", t.GetKey(), name, k, spec.GetType())
		}
	}
	return nil
}

func tagSpec(sch *databasev1.Property, name string) *databasev1.TagSpec {
	for _, ts := range sch.GetTags() {
		if ts.GetName() == name {
			return ts
		}
	}
	return nil
}

// checkPropertyQueryTags refuses criteria and order on tags no schema the
// query reads declares: BanyanDB answers an error, not an empty result.
func checkPropertyQueryTags(req *propertyv1.QueryRequest, schemas []*databasev1.Property) error {
	declared := func(tag string) bool {
		return slices.ContainsFunc(schemas, func(p *databasev1.Property) bool { return tagSpec(p, tag) != nil })
	}
	for _, tag := range criteriaTags(req.GetCriteria(), nil) {
		if !declared(tag) {
			return status.Errorf(codes.InvalidArgument, "criteria: tag %q is not declared by property %q", tag, req.GetName())
		}
	}
	if tag := req.GetOrderBy().GetTagName(); tag != "" && !declared(tag) {
		return status.Errorf(codes.InvalidArgument, "order_by: tag %q is not declared by property %q", tag, req.GetName())
	}
	return nil
}

// criteriaTags lists the tags c's conditions name.
func criteriaTags(c *modelv1.Criteria, out []string) []string {
	switch e := c.GetExp().(type) {
	case *modelv1.Criteria_Condition:
		return append(out, e.Condition.GetName())
	case *modelv1.Criteria_Le:
		return criteriaTags(e.Le.GetRight(), criteriaTags(e.Le.GetLeft(), out))
	}
	return out
}

func tagValue(tags []*modelv1.Tag, name string) *modelv1.TagValue {
	for _, t := range tags {
		if t.GetKey() == name {
			return t.GetValue()
		}
	}
	return nil
}

// sortedStored lists found in id order, so that a delete of many
// publishes in a stable order.
func sortedStored(found map[propertyID]*clusterv1.StoredProperty) []*clusterv1.StoredProperty {
	out := make([]*clusterv1.StoredProperty, 0, len(found))
	for _, sp := range found {
		out = append(out, sp)
	}
	slices.SortFunc(out, func(a, b *clusterv1.StoredProperty) int {
		return cmp.Compare(a.GetProperty().GetId(), b.GetProperty().GetId())
	})
	return out
}

// count counts an Apply or Delete of group under the write counters'
// "property" kind, and returns what counts its answer.
func (s *PropertyService) count(group string) func(error) {
	label, _ := labelBySchema(s.w.schema)(group)
	s.w.counters.Received(label, propertyKind).Inc()
	return func(err error) {
		st := modelv1.Status_STATUS_SUCCEED
		switch status.Code(err) {
		case codes.OK:
		case codes.NotFound:
			st = modelv1.Status_STATUS_NOT_FOUND
		case codes.InvalidArgument, codes.FailedPrecondition:
			st = modelv1.Status_STATUS_INVALID_ARGUMENT
		default:
			st = modelv1.Status_STATUS_INTERNAL_ERROR
		}
		s.w.counters.Answered(label, propertyKind, st).Inc()
	}
}
