package storage

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/aggregate"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/banyand/topn"
	"github.com/banyand-io/banyand/pkg/wire"
)

// QueryMeasurePartials answers a measure query's group_by, agg and top
// over the points of the shards q.partial names (a point's shard is its
// series hash mod the group's shard count), as partial aggregates the
// liaison merges with other nodes' (docs/design/queries.md): each group
// of the group-by tag values once, with its first point in the query's
// time order and the statistics of the aggregated field. Top without agg
// or group_by returns this node's top N points, enough for any global top
// N. The store keeps one version of a point, so nothing counts twice.
//
// Memory is bounded by aggregate.MaxGroups groups (past it, an invalid
// query naming the bound) or 2 × top N points, whatever the points in the
// range.
func (s *Store) QueryMeasurePartials(ctx context.Context, q *clusterv1.MeasureQuery) (*clusterv1.MeasurePartials, error) {
	res, err := s.queryPartials(ctx, q)
	return res, queryError(err)
}

func (s *Store) queryPartials(ctx context.Context, q *clusterv1.MeasureQuery) (*clusterv1.MeasurePartials, error) {
	req, def, pp := q.GetRequest(), q.GetSchema(), q.GetPartial()
	if req == nil || def == nil || pp == nil {
		return nil, fmt.Errorf("%w: partial measure query needs a request, a schema and a plan", errInvalidQuery)
	}
	if pp.GetShardNum() == 0 {
		return nil, fmt.Errorf("%w: partial measure query without the group's shard count", errInvalidQuery)
	}
	if topn.IsRecordName(req.GetName()) {
		return s.queryRankingPartials(ctx, q, pp)
	}
	p, layout, crit, out, err := measurePlan(q, 0, 0)
	if err != nil {
		return nil, err
	}
	f, err := newFolder(def, layout, req, p.desc)
	if err != nil {
		return nil, err
	}
	answers := make([]bool, pp.GetShardNum())
	for _, sh := range pp.GetShards() {
		if sh < pp.GetShardNum() {
			answers[sh] = true
		}
	}
	held := make([]bool, pp.GetShardNum())
	p.series, _ = seriesKey(p.name, def.GetEntity().GetTagNames(), crit.eq)
	p.terms = compileTerms(req.GetCriteria())
	defer func() { s.countReads(p.stats) }()
	db, err := s.DB()
	if err != nil {
		return nil, err
	}
	if p.begin < p.end {
		var dp measurev1.DataPointValue
		var wp wire.Point
		for _, group := range p.groups {
			for _, seg := range db.SegmentsIn(p.kind, group, p.begin, p.end) {
				// Read in key order, through the tag indexes or not: the
				// fold keeps the first point of each group in that order.
				sc := tsdb.Scan{Name: p.name, Begin: p.begin, End: p.end, SeriesKey: p.series}
				err := s.readSegment(ctx, db, seg, sc, p.terms, &p.stats,
					func(it *tsdb.Item) error {
						shard := uint32(it.SeriesHash % uint64(pp.GetShardNum()))
						held[shard] = true
						if !pp.GetAllShards() && !answers[shard] {
							return nil
						}
						if crit.match != nil {
							proto.Reset(&dp)
							if err := proto.Unmarshal(it.Payload, &dp); err != nil {
								return fmt.Errorf("storage: stored data point does not decode: %w", err)
							}
							if !crit.match(dp.GetTagFamilies()) {
								return nil
							}
						}
						// The fold reads the wire form: decoding whole
						// messages would cost most of the scan.
						if err := wire.ParseDataPoint(it.Payload, &wp); err != nil {
							return fmt.Errorf("storage: stored data point does not decode: %w", err)
						}
						return f.add(&wp, it)
					})
				if err != nil {
					return nil, err
				}
			}
		}
	}
	res := &clusterv1.MeasurePartials{Points: f.points}
	for sh, ok := range held {
		if ok {
			res.ShardsHeld = append(res.ShardsHeld, uint32(sh))
		}
	}
	for _, g := range f.result() {
		var dp measurev1.DataPointValue
		if err := proto.Unmarshal(g.first.payload, &dp); err != nil {
			return nil, fmt.Errorf("storage: stored data point does not decode: %w", err)
		}
		part := &clusterv1.MeasurePartial{Key: g.key, First: out.point(&dp, g.first.ts, g.first.sid, g.first.version)}
		g.stats.Fill(part)
		res.Groups = append(res.Groups, part)
	}
	return res, nil
}

// stored is a point as the scan met it; its payload is a copy.
type stored struct {
	ts      int64
	sid     uint64
	version int64
	payload []byte
	rank    float64 // the ranked field, for top without agg or group_by
}

// foldedGroup is one group as the scan folds it.
type foldedGroup struct {
	key   []byte
	first stored
	stats aggregate.Stats
}

// folder folds the points of one query into groups, or keeps the top N
// points when the query ranks points alone.
type folder struct {
	groupBy []tagRef
	agg     int // the aggregated field's index, -1 without agg
	top     *measurev1.QueryRequest_Top
	topAt   int // the ranked field's index
	desc    bool

	index  aggregate.Index
	groups []foldedGroup
	cands  []stored // top without agg or group_by
	key    []byte
	points uint64
}

func newFolder(def *databasev1.Measure, layout *tagLayout, req *measurev1.QueryRequest, desc bool) (*folder, error) {
	f := &folder{agg: -1, top: req.GetTop(), desc: desc}
	for _, fam := range req.GetGroupBy().GetTagProjection().GetTagFamilies() {
		for _, tag := range fam.GetTags() {
			ref, err := layout.tag(tag)
			if err != nil {
				return nil, err
			}
			f.groupBy = append(f.groupBy, ref)
		}
	}
	if req.GetAgg() != nil {
		i := fieldIndex(def, req.GetAgg().GetFieldName())
		if i < 0 {
			return nil, fmt.Errorf("%w: unknown aggregated field %q", errInvalidQuery, req.GetAgg().GetFieldName())
		}
		f.agg = i
	}
	if f.top != nil {
		if f.top.GetNumber() <= 0 || f.top.GetNumber() > schema.MaxQueryWindow {
			return nil, fmt.Errorf("%w: top number %d is not within 1..%d", errInvalidQuery, f.top.GetNumber(), schema.MaxQueryWindow)
		}
		if f.topAt = fieldIndex(def, f.top.GetFieldName()); f.topAt < 0 {
			return nil, fmt.Errorf("%w: unknown ranked field %q", errInvalidQuery, f.top.GetFieldName())
		}
	}
	return f, nil
}

// ranksPoints says each point is its own group: top without agg or
// group_by ranks points.
func (f *folder) ranksPoints() bool { return f.top != nil && f.agg < 0 && len(f.groupBy) == 0 }

func (f *folder) add(dp *wire.Point, it *tsdb.Item) error {
	f.points++
	at := stored{ts: it.Timestamp, sid: it.SeriesHash, version: it.Version}
	if f.ranksPoints() {
		if v := numberAt(dp, f.topAt); v != nil {
			at.rank = asFloat(v)
		}
		at.payload = bytes.Clone(it.Payload)
		f.cands = append(f.cands, at)
		if len(f.cands) >= 2*int(f.top.GetNumber()) {
			f.cutCandidates()
		}
		return nil
	}
	f.key = f.key[:0]
	for _, ref := range f.groupBy {
		v, ok := dp.Tag(ref.family, ref.tag)
		switch {
		case ok && v.Kind == wire.KindStr:
			f.key = aggregate.AppendStrKey(f.key, v.Bytes)
		case ok && v.Kind == wire.KindInt:
			f.key = aggregate.AppendIntKey(f.key, v.Int)
		default:
			f.key = aggregate.AppendNullKey(f.key)
		}
	}
	n, added, err := f.index.Find(f.key)
	if err != nil {
		return fmt.Errorf("%w: %w", errInvalidQuery, err)
	}
	if added {
		at.payload = bytes.Clone(it.Payload)
		f.groups = append(f.groups, foldedGroup{key: bytes.Clone(f.key), first: at})
	}
	g := &f.groups[n]
	if !added && f.before(at, g.first) {
		// The earlier point's payload reuses the replaced one's memory.
		g.first.payload = append(g.first.payload[:0], it.Payload...)
		g.first.ts, g.first.sid, g.first.version = at.ts, at.sid, at.version
	}
	if f.agg >= 0 {
		switch v := numberAt(dp, f.agg); {
		case v == nil:
		case v.Kind == wire.KindInt:
			g.stats.AddInt(v.Int)
		default:
			g.stats.AddFloat(asFloat(v))
		}
	}
	return nil
}

// numberAt is field at of dp when it is an int or a float, else nil (a
// point written without the field, or a stored value of another kind).
func numberAt(dp *wire.Point, at int) *wire.Value {
	if at < len(dp.Fields) && (dp.Fields[at].Kind == wire.KindInt || dp.Fields[at].Kind == wire.KindFloat) {
		return &dp.Fields[at]
	}
	return nil
}

// asFloat is a number of numberAt as a float.
func asFloat(v *wire.Value) float64 {
	if v.Kind == wire.KindFloat {
		return math.Float64frombits(uint64(v.Int))
	}
	return float64(v.Int)
}

// before orders two points of this node's group in the query's order.
func (f *folder) before(a, b stored) bool {
	return aggregate.Compare(aggregate.Position{Ts: a.ts, Sid: a.sid}, aggregate.Position{Ts: b.ts, Sid: b.sid}, f.desc) < 0
}

// cutCandidates keeps the top N candidates: by the ranked field, ties in
// the query's order, as the liaison ranks them.
func (f *folder) cutCandidates() {
	asc := f.top.GetFieldValueSort() == modelv1.Sort_SORT_ASC
	slices.SortFunc(f.cands, func(a, b stored) int {
		c := cmp.Compare(a.rank, b.rank)
		if !asc {
			c = -c
		}
		if c != 0 {
			return c
		}
		if f.before(a, b) {
			return -1
		}
		if f.before(b, a) {
			return 1
		}
		return 0
	})
	f.cands = f.cands[:min(len(f.cands), int(f.top.GetNumber()))]
}

// result is the folded groups, or the top candidates each as a group.
func (f *folder) result() []foldedGroup {
	if !f.ranksPoints() {
		return f.groups
	}
	f.cutCandidates()
	out := make([]foldedGroup, len(f.cands))
	for i, c := range f.cands {
		out[i] = foldedGroup{first: c}
	}
	return out
}

// pointMaker builds the data points a measure query answers from stored
// values: the projected tags and fields, timestamp, version and series id.
type pointMaker struct {
	def    *databasev1.Measure
	proj   projection
	fields []int
}

func newPointMaker(def *databasev1.Measure, layout *tagLayout, req *measurev1.QueryRequest) (pointMaker, error) {
	proj, err := layout.projection(req.GetTagProjection())
	if err != nil {
		return pointMaker{}, err
	}
	m := pointMaker{def: def, proj: proj, fields: make([]int, 0, len(req.GetFieldProjection().GetNames()))}
	for _, name := range req.GetFieldProjection().GetNames() {
		fi := fieldIndex(def, name)
		if fi < 0 {
			return pointMaker{}, fmt.Errorf("%w: unknown field %q in projection", errInvalidQuery, name)
		}
		m.fields = append(m.fields, fi)
	}
	return m, nil
}

func (m pointMaker) point(dp *measurev1.DataPointValue, ts int64, sid uint64, version int64) *measurev1.DataPoint {
	out := &measurev1.DataPoint{
		Timestamp:   timestampOf(dp.GetTimestamp(), ts),
		TagFamilies: m.proj.project(dp.GetTagFamilies()),
		Sid:         sid,
		Version:     version,
	}
	if len(m.fields) > 0 {
		out.Fields = make([]*measurev1.DataPoint_Field, len(m.fields))
		for i, fi := range m.fields {
			out.Fields[i] = &measurev1.DataPoint_Field{Name: m.def.GetFields()[fi].GetName(), Value: fieldAt(dp.GetFields(), fi)}
		}
	}
	return out
}

// fieldIndex is the position of field name in def, or -1.
func fieldIndex(def *databasev1.Measure, name string) int {
	return slices.IndexFunc(def.GetFields(), func(f *databasev1.FieldSpec) bool { return f.GetName() == name })
}
