package storage

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

// QueryTraces answers a trace query of one group (docs/design/traces.md):
//
//   - without trace_ids, the first phase: the traces with a span in the
//     time range (all time when it has none) that matches the criteria,
//     each with its order key (the value of order_tag that comes first
//     among its matching spans), the first offset+limit in order (ties by
//     trace id). At most offset+limit traces are held at any time. When
//     the criteria fix the trace id with EQ under AND, only that trace's
//     series is read.
//   - with trace_ids, the second: every span of those traces, whatever
//     their time, with the projected tags. Their bytes are bounded by
//     schema.MaxTraceReplyBytes; past it the query fails with an error
//     wrapping queue.ErrResourceExhausted.
func (s *Store) QueryTraces(ctx context.Context, q *clusterv1.TraceQuery) (*clusterv1.TraceQueryResult, error) {
	res, err := s.queryTraces(ctx, q)
	return res, queryError(err)
}

// traceSchema resolves a trace schema's tags for the criteria evaluation
// streams and measures use: one family of its tags.
type traceSchema struct {
	def     *databasev1.Trace
	layout  *tagLayout
	traceID tagRef
	binary  bool // the trace id tag holds binary data
}

func newTraceSchema(def *databasev1.Trace) (*traceSchema, error) {
	tags := make([]*databasev1.TagSpec, len(def.GetTags()))
	ts := &traceSchema{def: def}
	for i, t := range def.GetTags() {
		tags[i] = &databasev1.TagSpec{Name: t.GetName(), Type: t.GetType()}
		if t.GetName() == def.GetTraceIdTagName() {
			ts.binary = t.GetType() == databasev1.TagType_TAG_TYPE_DATA_BINARY
		}
	}
	ts.layout = newTagLayout([]*databasev1.TagFamilySpec{{Tags: tags}})
	var err error
	if ts.traceID, err = ts.layout.tag(def.GetTraceIdTagName()); err != nil {
		return nil, fmt.Errorf("%w: trace id tag %q is not in the schema", errInvalidQuery, def.GetTraceIdTagName())
	}
	return ts, nil
}

// seriesKey is the series key of one trace, as the liaison computes it.
func (ts *traceSchema) seriesKey(traceID string) ([]byte, error) {
	v := route.StrValue(traceID)
	if ts.binary {
		v = route.BytesValue([]byte(traceID))
	}
	return route.AppendSeriesKey(nil, ts.def.GetMetadata().GetName(), []route.EntityValue{v})
}

// idOf is a span's trace id: its trace id tag's string or bytes.
func (ts *traceSchema) idOf(tags []*modelv1.TagFamilyForWrite) string {
	switch v := lookup(tags, ts.traceID).GetValue().(type) {
	case *modelv1.TagValue_Str:
		return v.Str.GetValue()
	case *modelv1.TagValue_BinaryData:
		return string(v.BinaryData)
	}
	return ""
}

func (s *Store) queryTraces(ctx context.Context, q *clusterv1.TraceQuery) (*clusterv1.TraceQueryResult, error) {
	req, def := q.GetRequest(), q.GetSchema()
	switch {
	case req == nil || def == nil:
		return nil, fmt.Errorf("%w: trace query needs a request and a schema", errInvalidQuery)
	case len(req.GetGroups()) == 0 || req.GetName() == "":
		return nil, fmt.Errorf("%w: trace query needs a group and a name", errInvalidQuery)
	}
	ts, err := newTraceSchema(def)
	if err != nil {
		return nil, err
	}
	db, err := s.DB()
	if err != nil {
		return nil, err
	}
	start, st := time.Now(), scanStats{}
	defer func() { s.countReads(st) }()
	var res *clusterv1.TraceQueryResult
	if len(q.GetTraceIds()) > 0 {
		res, err = s.traceSpans(ctx, db, req.GetGroups(), req.GetName(), req.GetTagProjection(), ts, q.GetTraceIds(), &st)
		if err == nil {
			res.Trace = stageTrace(req.GetTrace(), "data node: read the spans of the traces", start, st, len(res.GetSpans()))
		}
		return res, err
	}
	res, err = s.selectTraces(ctx, db, q, ts, &st)
	if err == nil {
		res.Trace = stageTrace(req.GetTrace(), "data node: select traces", start, st, len(res.GetTraces()))
	}
	return res, err
}

// traceSpans is the second phase: every span of ids.
func (s *Store) traceSpans(ctx context.Context, db *tsdb.DB, groups []string, name string, projection []string,
	ts *traceSchema, ids []string, st *scanStats,
) (*clusterv1.TraceQueryResult, error) {
	proj := make([]tagRef, len(projection))
	for i, p := range projection {
		r, err := ts.layout.tag(p)
		if err != nil {
			return nil, err
		}
		proj[i] = r
	}
	res := &clusterv1.TraceQueryResult{}
	size := 0
	for _, g := range slices.Compact(slices.Sorted(slices.Values(groups))) {
		segs := db.SegmentsIn(tsdb.KindTrace, g, math.MinInt64, math.MaxInt64)
		for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
			key, err := ts.seriesKey(id)
			if err != nil {
				return nil, fmt.Errorf("%w: trace id %q: %w", errInvalidQuery, id, err)
			}
			for _, seg := range segs {
				st.segments++
				sc := tsdb.Scan{Name: name, Begin: math.MinInt64, End: math.MaxInt64, SeriesKey: key}
				err := db.ScanSegment(ctx, seg, sc, func(it *tsdb.Item) error {
					st.scanned++
					st.matched++
					if size += len(it.Payload); size > schema.MaxTraceReplyBytes {
						return fmt.Errorf("%w: the spans of the traces asked for are over %d bytes", queue.ErrResourceExhausted, schema.MaxTraceReplyBytes)
					}
					var sv clusterv1.SpanValue
					if err := proto.Unmarshal(it.Payload, &sv); err != nil {
						return fmt.Errorf("storage: stored span does not decode: %w", err)
					}
					fams := []*modelv1.TagFamilyForWrite{sv.GetTags()}
					span := &clusterv1.StoredSpan{
						TraceId: id, SpanId: string(it.ElementID), Timestamp: it.Timestamp, Version: it.Version, Span: sv.GetSpan(),
					}
					for _, r := range proj {
						span.Tags = append(span.Tags, &modelv1.Tag{Key: r.name, Value: answered(lookup(fams, r))})
					}
					res.Spans = append(res.Spans, span)
					return nil
				})
				if err != nil {
					return nil, err
				}
			}
		}
	}
	return res, nil
}

// selectTraces is the first phase: the first offset+limit traces with a
// matching span, by order key.
func (s *Store) selectTraces(ctx context.Context, db *tsdb.DB, q *clusterv1.TraceQuery, ts *traceSchema,
	st *scanStats,
) (*clusterv1.TraceQueryResult, error) {
	req := q.GetRequest()
	if err := schema.CheckQueryWindow(req.GetOffset(), req.GetLimit()); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidQuery, err)
	}
	begin, end := int64(math.MinInt64), int64(math.MaxInt64)
	if tr := req.GetTimeRange(); tr != nil {
		begin, end = queryNanos(tr.GetBegin()), queryNanos(tr.GetEnd())
		if end < math.MaxInt64 {
			end++ // both ends are in the range
		}
	}
	crit, err := compileCriteria(req.GetCriteria(), ts.layout)
	if err != nil {
		return nil, err
	}
	orderTag := q.GetOrderTag()
	if orderTag == "" {
		orderTag = ts.def.GetTimestampTagName()
	}
	order, err := ts.layout.tag(orderTag)
	if err != nil {
		return nil, err
	}
	limit := req.GetLimit()
	if limit == 0 {
		limit = schema.DefaultTraceLimit
	}
	top := newTraceTop(int(req.GetOffset())+int(limit), req.GetOrderBy().GetSort() == modelv1.Sort_SORT_DESC)
	// One trace's spans when the criteria fix its id; else the name's time
	// index, one key range for the time range.
	kind, series, terms := tsdb.KindTrace, []byte(nil), (*termQuery)(nil)
	if key, ok := seriesKey(req.GetName(), []string{ts.def.GetTraceIdTagName()}, crit.eq); ok {
		series = key
	} else {
		// The time index is one series: its tag indexes narrow it.
		kind, terms = tsdb.KindTraceTime, compileTerms(req.GetCriteria())
		if terms == nil {
			series = TraceTimeSeries(req.GetName())
		}
	}
	if begin >= end {
		return &clusterv1.TraceQueryResult{}, nil
	}
	// Ordered by the timestamp tag, a trace's key is the time of one of
	// its matching spans, and both readings visit a segment's spans in
	// time order: once offset+limit traces are kept, spans after the worst
	// key kept (ascending) cannot change them, nor can a segment wholly
	// before it (descending), which is then not read.
	desc := req.GetOrderBy().GetSort() == modelv1.Sort_SORT_DESC
	byTime := orderTag == ts.def.GetTimestampTagName()
	worst := func() (int64, bool) {
		if !byTime || !top.full() || top.heap[0].GetNullKey() {
			return 0, false
		}
		return top.heap[0].GetKey(), true
	}
	var sv clusterv1.SpanValue
	for _, g := range slices.Compact(slices.Sorted(slices.Values(req.GetGroups()))) {
		segs := db.SegmentsIn(kind, g, begin, end)
		if desc {
			slices.Reverse(segs)
		}
		for _, seg := range segs {
			if w, ok := worst(); ok && (!desc && seg.Start > w || desc && seg.End <= w) {
				break
			}
			sc := tsdb.Scan{Name: req.GetName(), Begin: begin, End: end, SeriesKey: series}
			err := s.readSegment(ctx, db, seg, sc, terms, st, func(it *tsdb.Item) error {
				if w, ok := worst(); ok && !desc && it.Timestamp > w {
					return errTraceScanDone
				}
				sv.Reset()
				if err := proto.Unmarshal(it.Payload, &sv); err != nil {
					return fmt.Errorf("storage: stored span does not decode: %w", err)
				}
				fams := []*modelv1.TagFamilyForWrite{sv.GetTags()}
				if crit.match != nil && !crit.match(fams) {
					return nil
				}
				st.matched++
				top.offer(traceCandidate(ts.idOf(fams), lookup(fams, order)))
				return nil
			})
			if errors.Is(err, errTraceScanDone) {
				break // the group's later spans cannot change what is kept
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return &clusterv1.TraceQueryResult{Traces: top.sorted()}, nil
}

// errTraceScanDone ends a first-phase scan early (see selectTraces).
var errTraceScanDone = errors.New("trace scan done")

// traceCandidate is a trace's key from one of its spans: an int tag's
// value or a timestamp tag's Unix nanoseconds; null otherwise.
func traceCandidate(id string, v *modelv1.TagValue) *clusterv1.TraceKey {
	k := &clusterv1.TraceKey{TraceId: id, NullKey: true}
	switch x := v.GetValue().(type) {
	case *modelv1.TagValue_Int:
		k.Key, k.NullKey = x.Int.GetValue(), false
	case *modelv1.TagValue_Timestamp:
		k.Key, k.NullKey = queryNanos(x.Timestamp), false
	}
	return k
}

// traceTop keeps the n traces that come first in output order, each with
// the best key of the spans offered for it. A trace evicted by n better
// ones can come back only with a better key, so what is kept at the end
// is the first n by their best keys; it never holds more than n.
type traceTop struct {
	n    int
	desc bool
	heap []*clusterv1.TraceKey // root: the one that comes last
	at   map[string]int        // trace id → index in heap
}

func newTraceTop(n int, desc bool) *traceTop {
	return &traceTop{n: n, desc: desc, at: make(map[string]int)}
}

func (t *traceTop) before(a, b *clusterv1.TraceKey) bool {
	return schema.CompareTraceKeys(a, b, t.desc) < 0
}

func (t *traceTop) full() bool { return len(t.heap) >= t.n }

func (t *traceTop) Len() int           { return len(t.heap) }
func (t *traceTop) Less(i, j int) bool { return t.before(t.heap[j], t.heap[i]) }
func (t *traceTop) Swap(i, j int) {
	t.heap[i], t.heap[j] = t.heap[j], t.heap[i]
	t.at[t.heap[i].GetTraceId()], t.at[t.heap[j].GetTraceId()] = i, j
}
func (t *traceTop) Push(x any) {
	k := x.(*clusterv1.TraceKey)
	t.at[k.GetTraceId()] = len(t.heap)
	t.heap = append(t.heap, k)
}
func (t *traceTop) Pop() any {
	k := t.heap[len(t.heap)-1]
	t.heap = t.heap[:len(t.heap)-1]
	delete(t.at, k.GetTraceId())
	return k
}

// offer takes a trace's key from one more of its spans.
func (t *traceTop) offer(k *clusterv1.TraceKey) {
	if t.n <= 0 {
		return
	}
	if i, ok := t.at[k.GetTraceId()]; ok {
		if t.before(k, t.heap[i]) {
			t.heap[i] = k
			heap.Fix(t, i)
		}
		return
	}
	if len(t.heap) < t.n {
		heap.Push(t, k)
		return
	}
	if t.before(k, t.heap[0]) {
		delete(t.at, t.heap[0].GetTraceId())
		t.heap[0] = k
		t.at[k.GetTraceId()] = 0
		heap.Fix(t, 0)
	}
}

// sorted returns the kept traces in output order.
func (t *traceTop) sorted() []*clusterv1.TraceKey {
	out := slices.Clone(t.heap)
	slices.SortFunc(out, func(a, b *clusterv1.TraceKey) int { return schema.CompareTraceKeys(a, b, t.desc) })
	return out
}
