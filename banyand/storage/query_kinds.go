package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/banyand-io/banyand/banyand/schema"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
)

// QueryStream answers a stream query against this node's data: elements of
// request.name in the request's groups with a timestamp in [begin, end)
// that match the criteria, projected, ordered by time (ascending unless
// SORT_DESC) and cut to the first offset+limit (limit 0 means
// schema.DefaultStreamLimit). The offset is not skipped here: the liaison merges
// the replies of several nodes and skips it once.
//
// When the criteria fix every entity tag with EQ under AND, the query
// seeks straight to that series; otherwise it scans every series of the
// segments the time range overlaps.
func (s *Store) QueryStream(ctx context.Context, q *clusterv1.StreamQuery) (*streamv1.QueryResponse, error) {
	return s.queryStream(ctx, q, false)
}

// QueryStreamResult is QueryStream with each element's series key and
// version: the answer a data node sends the liaison, which keeps of one
// element several nodes hold the highest version.
func (s *Store) QueryStreamResult(ctx context.Context, q *clusterv1.StreamQuery) (*clusterv1.StreamQueryResult, error) {
	res, err := s.doQueryStream(ctx, q, queryOpts{})
	return res, queryError(err)
}

func (s *Store) queryStream(ctx context.Context, q *clusterv1.StreamQuery, forceScan bool) (*streamv1.QueryResponse, error) {
	res, err := s.doQueryStream(ctx, q, queryOpts{forceScan: forceScan})
	if err != nil {
		return nil, queryError(err)
	}
	return &streamv1.QueryResponse{Elements: res.GetElements()}, nil
}

// queryOpts are a query's test settings: forceScan reads every record of
// the range (no entity seek, no index), stats receives what it read.
type queryOpts struct {
	forceScan bool
	stats     *scanStats
}

func (s *Store) doQueryStream(ctx context.Context, q *clusterv1.StreamQuery, o queryOpts) (*clusterv1.StreamQueryResult, error) {
	req, def := q.GetRequest(), q.GetSchema()
	if req == nil || def == nil {
		return nil, fmt.Errorf("%w: stream query needs a request and a schema", errInvalidQuery)
	}
	start := time.Now()
	p := &plan{kind: tsdb.KindStream}
	if err := p.common(req.GetGroups(), req.GetName(), req.GetTimeRange(), req.GetOrderBy(),
		req.GetOffset(), req.GetLimit(), schema.DefaultStreamLimit); err != nil {
		return nil, err
	}
	layout := newTagLayout(def.GetTagFamilies())
	crit, err := compileCriteria(req.GetCriteria(), layout)
	if err != nil {
		return nil, err
	}
	proj, err := layout.projection(req.GetProjection())
	if err != nil {
		return nil, err
	}
	if !o.forceScan {
		p.series, _ = seriesKey(p.name, def.GetEntity().GetTagNames(), crit.eq)
		p.terms = compileTerms(req.GetCriteria())
		p.sortTag = layout.sortable(q.GetOrderTag())
	}
	if err := p.filterAndOrder(crit, layout, q.GetOrderTag(), req.GetOrderBy(), storedTags[streamv1.ElementValue]("element")); err != nil {
		return nil, err
	}
	hits, err := s.run(ctx, p)
	if o.stats != nil {
		*o.stats = p.stats
	}
	if err != nil {
		return nil, err
	}
	res := &clusterv1.StreamQueryResult{
		Elements:   make([]*streamv1.Element, 0, len(hits)),
		SeriesKeys: make([][]byte, 0, len(hits)),
		Versions:   make([]int64, 0, len(hits)),
	}
	for _, h := range hits {
		var ev streamv1.ElementValue
		if err := proto.Unmarshal(h.payload, &ev); err != nil {
			return nil, fmt.Errorf("storage: stored element does not decode: %w", err)
		}
		res.Elements = append(res.Elements, &streamv1.Element{
			ElementId:   string(h.eid),
			Timestamp:   timestampOf(ev.GetTimestamp(), h.ts),
			TagFamilies: proj.project(ev.GetTagFamilies()),
		})
		res.SeriesKeys = append(res.SeriesKeys, h.seriesKey)
		res.Versions = append(res.Versions, h.version)
		if p.orderKey != nil {
			res.OrderKeys = append(res.OrderKeys, orNull(h.key))
		}
	}
	res.Trace = stageTrace(req.GetTrace(), "data node: scan stream", start, p.stats, len(res.Elements))
	return res, nil
}

// QueryMeasure is QueryStream for measures (limit 0 means
// schema.DefaultMeasureLimit): data points with the projected tags and fields, their
// version, and sid = xxhash64 of the series key. Group by, aggregation and
// top-N are ErrUnimplemented here: a query with a partial plan asks for
// them (QueryMeasurePartials).
func (s *Store) QueryMeasure(ctx context.Context, q *clusterv1.MeasureQuery) (*measurev1.QueryResponse, error) {
	return s.queryMeasure(ctx, q, false)
}

func (s *Store) queryMeasure(ctx context.Context, q *clusterv1.MeasureQuery, forceScan bool) (*measurev1.QueryResponse, error) {
	resp, err := s.doQueryMeasure(ctx, q, queryOpts{forceScan: forceScan})
	return resp, queryError(err)
}

func (s *Store) doQueryMeasure(ctx context.Context, q *clusterv1.MeasureQuery, o queryOpts) (*measurev1.QueryResponse, error) {
	req, def := q.GetRequest(), q.GetSchema()
	if req == nil || def == nil {
		return nil, fmt.Errorf("%w: measure query needs a request and a schema", errInvalidQuery)
	}
	switch {
	case req.GetGroupBy() != nil:
		return nil, fmt.Errorf("%w: measure group by", ErrUnimplemented)
	case req.GetAgg() != nil:
		return nil, fmt.Errorf("%w: measure aggregation", ErrUnimplemented)
	case req.GetTop() != nil:
		return nil, fmt.Errorf("%w: measure top-N", ErrUnimplemented)
	}
	start := time.Now()
	p, layout, crit, out, err := measurePlan(q, req.GetOffset(), req.GetLimit())
	if err != nil {
		return nil, err
	}
	if !o.forceScan {
		p.series, _ = seriesKey(p.name, def.GetEntity().GetTagNames(), crit.eq)
		p.terms = compileTerms(req.GetCriteria())
		p.sortTag = layout.sortable(q.GetOrderTag())
	}
	if err := p.filterAndOrder(crit, layout, q.GetOrderTag(), req.GetOrderBy(), storedTags[measurev1.DataPointValue]("data point")); err != nil {
		return nil, err
	}
	hits, err := s.run(ctx, p)
	if o.stats != nil {
		*o.stats = p.stats
	}
	if err != nil {
		return nil, err
	}
	resp := &measurev1.QueryResponse{DataPoints: make([]*measurev1.DataPoint, 0, len(hits))}
	for _, h := range hits {
		var dp measurev1.DataPointValue
		if err := proto.Unmarshal(h.payload, &dp); err != nil {
			return nil, fmt.Errorf("storage: stored data point does not decode: %w", err)
		}
		resp.DataPoints = append(resp.DataPoints, out.point(&dp, h.ts, h.hash, h.version))
	}
	resp.Trace = stageTrace(req.GetTrace(), "data node: scan measure", start, p.stats, len(resp.DataPoints))
	return resp, nil
}

// measurePlan is what measure queries, whole or partial, start from: the
// plan of the range and the window (offset, limit), the schema's tag
// layout, the compiled criteria and the maker of the answer's points.
func measurePlan(q *clusterv1.MeasureQuery, offset, limit uint32) (*plan, *tagLayout, compiled, pointMaker, error) {
	req, def := q.GetRequest(), q.GetSchema()
	p := &plan{kind: tsdb.KindMeasure}
	if err := p.common(req.GetGroups(), req.GetName(), req.GetTimeRange(), req.GetOrderBy(),
		offset, limit, schema.DefaultMeasureLimit); err != nil {
		return nil, nil, compiled{}, pointMaker{}, err
	}
	layout := newTagLayout(def.GetTagFamilies())
	crit, err := compileCriteria(req.GetCriteria(), layout)
	if err != nil {
		return nil, nil, compiled{}, pointMaker{}, err
	}
	out, err := newPointMaker(def, layout, req)
	if err != nil {
		return nil, nil, compiled{}, pointMaker{}, err
	}
	return p, layout, crit, out, nil
}

// storedTags returns a maker of readers of the tag families of a stored
// payload of type T (an element, a data point); a reader reuses one
// message, as a scan reads one payload at a time.
func storedTags[T any, PT interface {
	*T
	proto.Message
	GetTagFamilies() []*modelv1.TagFamilyForWrite
}](what string) func() func([]byte) ([]*modelv1.TagFamilyForWrite, error) {
	return func() func([]byte) ([]*modelv1.TagFamilyForWrite, error) {
		m := PT(new(T))
		return func(payload []byte) ([]*modelv1.TagFamilyForWrite, error) {
			proto.Reset(m)
			if err := proto.Unmarshal(payload, m); err != nil {
				return nil, fmt.Errorf("storage: stored %s does not decode: %w", what, err)
			}
			return m.GetTagFamilies(), nil
		}
	}
}

// filterAndOrder sets p's criteria match and, when the liaison resolved
// the index rule a query orders by to a tag, its order key; tags reads a
// stored payload's tags. Each gets a reader of its own: the scan calls
// them on the same payload one after the other.
func (p *plan) filterAndOrder(crit compiled, layout *tagLayout, orderTag string, order *modelv1.QueryOrder,
	tags func() func([]byte) ([]*modelv1.TagFamilyForWrite, error),
) error {
	if orderTag != "" {
		ref, err := layout.tag(orderTag)
		if err != nil {
			return err
		}
		read := tags()
		p.orderKey = func(payload []byte) (*modelv1.TagValue, error) {
			tfs, err := read(payload)
			if err != nil {
				return nil, err
			}
			return lookup(tfs, ref), nil
		}
	} else if order.GetIndexRuleName() != "" {
		return fmt.Errorf("%w: order by index rule %q without the tag it orders by", errInvalidQuery, order.GetIndexRuleName())
	}
	if crit.match != nil {
		read := tags()
		p.match = func(payload []byte) (bool, error) {
			tfs, err := read(payload)
			if err != nil {
				return false, err
			}
			return crit.match(tfs), nil
		}
	}
	return nil
}

// orNull is v, or the null value for a tag the element was written without.
func orNull(v *modelv1.TagValue) *modelv1.TagValue {
	if v.GetValue() == nil {
		return &modelv1.TagValue{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}}
	}
	return v
}

// fieldAt returns the stored field i, or null when the write had none.
func fieldAt(fields []*modelv1.FieldValue, i int) *modelv1.FieldValue {
	if i < len(fields) && fields[i].GetValue() != nil {
		return fields[i]
	}
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Null{Null: structpb.NullValue_NULL_VALUE}}
}

func timestampOf(stored *timestamppb.Timestamp, nanos int64) *timestamppb.Timestamp {
	if stored != nil {
		return stored
	}
	return timestamppb.New(time.Unix(0, nanos))
}
