package storage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/banyand/topn"
	"github.com/banyand-io/banyand/pkg/registry"
	"github.com/banyand-io/banyand/pkg/wire"
)

// TopNSchemas is where a data node finds the top-N aggregations it keeps
// rankings of, and their source measures (the schema cache).
type TopNSchemas interface {
	Current() *schema.Snapshot
}

// PreAggregateTopN makes the store keep, as writes of a top-N
// aggregation's source measure arrive, the aggregation's rankings (see
// package topn); call it before Start. Without it the store keeps none
// and a TopN is answered from the points.
func (s *Store) PreAggregateTopN(src TopNSchemas) {
	s.topn = &topNAggregator{src: src, rankings: make(map[rankKey]*heldRanking), windows: make(map[windowKey][]rankKey),
		stored: make(map[windowKey]bool), newest: make(map[string]int64)}
}

// topNAggregator maintains the rankings of a store. One batch at a time
// updates them (mu): the updates are a few map operations a write, and
// the rankings a batch changed are encoded into its own commit. Two
// batches' commits may land in either order; each stored ranking carries
// a version counting its changes and the higher version wins, as for any
// data point.
//
// A ranking lives in memory while its window is among the lru_size (at
// least 2) newest of its aggregation and while a commit of its records
// is under way; a write to an older window, or the first write to a
// window after a restart, reads the stored ranking back first, so a
// ranking counts every acknowledged write whatever the order or the
// restarts. A batch whose commit fails has still been counted: its
// retry writes the same values.
type topNAggregator struct {
	src   TopNSchemas
	specs atomic.Pointer[topNSpecs]

	mu       sync.Mutex
	rankings map[rankKey]*heldRanking
	windows  map[windowKey][]rankKey // the rankings held of each window
	// stored says whether a window has rankings stored (a marker record
	// with each batch's): a window first seen with none needs no read
	// for each of its rankings.
	stored map[windowKey]bool
	newest map[string]int64 // an aggregation's newest window
	pt     wire.Point       // the write being counted
}

// topNSpecs are the aggregations of one schema revision, by source measure.
type topNSpecs struct {
	rev      int64
	bySource map[schema.Key][]*topNSpec
}

// topNSpec is one aggregation resolved against its source measure.
type topNSpec struct {
	id      string
	records [2]string // the rankings' names, ascending and descending (topn.RecordName)
	marker  string    // the markers' name
	group   string    // the source measure's: where the records go
	field   int
	groupBy []tagRef
	entity  []tagRef // the group-by tags, then the entity's
	names   []string // entity's names
	// markerKey is the series key of the windows' markers.
	markerKey []byte
	match     predicate
	counters  int
	sorts     []bool // desc, one ranking each
	interval  int64
	windows   int64
}

// recordName is the name of the rankings kept desc's way.
func (spec *topNSpec) recordName(desc bool) string {
	if desc {
		return spec.records[1]
	}
	return spec.records[0]
}

type rankKey struct {
	agg    string
	desc   bool
	shard  uint32
	window int64
	group  string // the group-by values (entity encoding)
}

// windowKey is a window of an aggregation.
type windowKey struct {
	agg    string
	window int64
}

type heldRanking struct {
	*topn.Ranking
	spec      *topNSpec
	key       rankKey
	recordKey []byte              // the record's series key
	tags      []*modelv1.TagValue // the record's
	list      []byte              // the last encoding, reused
	dirty     bool
	// inflight counts the commits of its records under way: a ranking is
	// not let go of before they are over, so that reading it back never
	// misses one.
	inflight int
}

// topNWrite is a measure write of a batch (its index) and its shard.
type topNWrite struct {
	at    int
	shard uint32
}

// current returns the aggregations of the schema's current revision.
func (a *topNAggregator) current() *topNSpecs {
	snap := a.src.Current()
	if snap == nil {
		return &topNSpecs{}
	}
	if sp := a.specs.Load(); sp != nil && sp.rev == snap.Rev {
		return sp
	}
	sp := &topNSpecs{rev: snap.Rev, bySource: make(map[schema.Key][]*topNSpec)}
	for _, agg := range snap.TopNAggregations {
		src := schema.Key{Group: agg.GetSourceMeasure().GetGroup(), Name: agg.GetSourceMeasure().GetName()}
		if m := snap.Measures[src]; m != nil {
			if spec, err := compileTopN(agg, m); err == nil {
				sp.bySource[src] = append(sp.bySource[src], spec)
			}
		}
	}
	a.specs.Store(sp)
	return sp
}

// compileTopN resolves agg against its source measure m. An aggregation
// whose measure has no interval, or that names what m lacks, keeps no
// rankings (its TopN is answered from the points).
func compileTopN(agg *databasev1.TopNAggregation, m *databasev1.Measure) (*topNSpec, error) {
	iv, err := registry.ParseDuration(m.GetInterval())
	if err != nil || iv <= 0 {
		return nil, fmt.Errorf("measure %s has no interval", m.GetMetadata().GetName())
	}
	l := newTagLayout(m.GetTagFamilies())
	crit, err := compileCriteria(agg.GetCriteria(), l)
	if err != nil {
		return nil, err
	}
	id := topn.AggID(agg)
	markerKey, _ := seriesKey(topn.MarkerName(id), []string{topn.TagAgg}, map[string]*modelv1.TagValue{
		topn.TagAgg: {Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: topn.AggID(agg)}}}})
	spec := &topNSpec{id: id, marker: topn.MarkerName(id), markerKey: markerKey,
		records: [2]string{topn.RecordName(id, modelv1.Sort_SORT_ASC), topn.RecordName(id, modelv1.Sort_SORT_DESC)}, group: m.GetMetadata().GetGroup(), field: -1, match: crit.match,
		counters: int(max(agg.GetCountersNumber(), 1)), interval: iv.Nanoseconds(), windows: int64(max(agg.GetLruSize(), 2))}
	for i, f := range m.GetFields() {
		if f.GetName() == agg.GetFieldName() {
			spec.field = i
		}
	}
	if spec.field < 0 {
		return nil, fmt.Errorf("measure %s has no field %q", m.GetMetadata().GetName(), agg.GetFieldName())
	}
	seen := map[string]bool{}
	for i, name := range append(append([]string{}, agg.GetGroupByTagNames()...), m.GetEntity().GetTagNames()...) {
		ref, err := l.tag(name)
		if err != nil {
			return nil, err
		}
		if i < len(agg.GetGroupByTagNames()) {
			spec.groupBy = append(spec.groupBy, ref)
		}
		if !seen[name] {
			seen[name] = true
			spec.entity = append(spec.entity, ref)
			spec.names = append(spec.names, name)
		}
	}
	switch agg.GetFieldValueSort() {
	case modelv1.Sort_SORT_ASC:
		spec.sorts = []bool{false}
	case modelv1.Sort_SORT_DESC:
		spec.sorts = []bool{true}
	default:
		spec.sorts = []bool{false, true}
	}
	return spec, nil
}

// observe counts the writes ws of a batch into the rankings and returns
// the records of those that changed, for the batch's commit.
func (a *topNAggregator) observe(ctx context.Context, db *tsdb.DB, batch []tsdb.Write, ws []topNWrite) ([]tsdb.Write, []*heldRanking, error) {
	specs := a.current()
	if len(specs.bySource) == 0 {
		return nil, nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var touched []*heldRanking
	var gk []byte
	advanced := false
	pt := &a.pt
	for _, o := range ws {
		w := &batch[o.at]
		list := specs.bySource[schema.Key{Group: w.Group, Name: w.Name}]
		if len(list) == 0 {
			continue
		}
		if err := wire.ParseDataPoint(w.Value, pt); err != nil {
			continue // stored as is; a query reports it
		}
		var tfs []*modelv1.TagFamilyForWrite // parsed for criteria only
		for _, spec := range list {
			v, ok := fieldValue(pt, spec.field)
			if !ok {
				continue
			}
			if spec.match != nil {
				if tfs == nil {
					var dp measurev1.DataPointValue
					if err := proto.Unmarshal(w.Value, &dp); err != nil {
						break
					}
					tfs = dp.GetTagFamilies()
				}
				if !spec.match(tfs) {
					continue
				}
			}
			window := w.Timestamp - mod(w.Timestamp, spec.interval)
			gk = gk[:0]
			for _, r := range spec.groupBy {
				gk = topn.AppendEntityValue(gk, entityRaw(pt, r))
			}
			entity := func() []byte {
				var out []byte
				for _, r := range spec.entity {
					out = topn.AppendEntityValue(out, entityRaw(pt, r))
				}
				return out
			}
			for _, desc := range spec.sorts {
				key := rankKey{agg: spec.id, desc: desc, shard: o.shard, window: window, group: string(gk)}
				r := a.rankings[key]
				if r == nil {
					wk := windowKey{spec.id, window}
					stored, seen := a.stored[wk]
					if !seen {
						var err error
						if stored, err = a.hasMarker(ctx, db, spec, window); err != nil {
							return nil, nil, undirty(touched, err)
						}
						a.stored[wk] = stored
					}
					var err error
					if r, err = a.load(ctx, db, spec, key, pt, stored); err != nil {
						return nil, nil, undirty(touched, err)
					}
				}
				if r.Put(w.SeriesKey, w.Timestamp, w.Version, v, entity) && !r.dirty {
					r.dirty = true
					touched = append(touched, r)
				}
			}
			if window > a.newest[spec.id] {
				a.newest[spec.id] = window
				advanced = true
			}
		}
	}
	out := make([]tsdb.Write, 0, len(touched)+1)
	var buf []byte // the batch's own: its commit runs after mu is released
	var marked []windowKey
	for _, r := range touched {
		if wk := (windowKey{r.spec.id, r.key.window}); !slices.Contains(marked, wk) {
			marked = append(marked, wk)
			a.stored[wk] = true
			start := len(buf)
			buf = marker(buf, r.spec, r.key.window)
			out = append(out, tsdb.Write{Kind: tsdb.KindMeasure, Group: r.spec.group, Name: r.spec.marker, SeriesKey: r.spec.markerKey,
				Timestamp: r.key.window, Value: buf[start:len(buf):len(buf)]})
		}
		r.dirty = false
		r.inflight++
		r.Version++
		start := len(buf)
		buf = r.record(buf)
		out = append(out, tsdb.Write{Kind: tsdb.KindMeasure, Group: r.spec.group, Name: r.spec.recordName(r.key.desc), SeriesKey: r.recordKey,
			Timestamp: r.key.window, Version: r.Version, Value: buf[start:len(buf):len(buf)]})
	}
	if advanced {
		a.evict()
	}
	return out, touched, nil
}

// undirty clears the marks of the rankings a failed batch changed, so
// that the next batch to change them stores them; it returns err.
func undirty(touched []*heldRanking, err error) error {
	for _, r := range touched {
		r.dirty = false
	}
	return err
}

// committed says the commit of the records of rankings held is over,
// stored or not.
func (a *topNAggregator) committed(held []*heldRanking) {
	if len(held) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, h := range held {
		h.inflight--
	}
}

// fieldValue is field i of pt, when it is a number.
func fieldValue(pt *wire.Point, i int) (topn.Value, bool) {
	if i >= len(pt.Fields) {
		return topn.Value{}, false
	}
	switch f := &pt.Fields[i]; f.Kind {
	case wire.KindInt:
		return topn.Value{Int: f.Int}, true
	case wire.KindFloat:
		return topn.Value{F: math.Float64frombits(uint64(f.Int)), Float: true}, true
	}
	return topn.Value{}, false
}

// entityRaw is tag r of pt as a series is named by it: the TagValue as
// written, or nothing for a null (an empty string or binary value is
// one, as queries read them back).
func entityRaw(pt *wire.Point, r tagRef) []byte {
	v, ok := pt.Tag(r.family, r.tag)
	if !ok || v.Kind.IsNull() || ((v.Kind == wire.KindStr || v.Kind == wire.KindBinary) && len(v.Bytes) == 0) {
		return nil
	}
	return v.Raw
}

// mod is ts mod iv, in [0, iv) also for times before 1970.
func mod(ts, iv int64) int64 {
	m := ts % iv
	if m < 0 {
		m += iv
	}
	return m
}

// load returns the ranking of key, read back from its stored record when
// there is one (the window has stored rankings), and holds it; pt is a
// write it counts (for the group-by values).
func (a *topNAggregator) load(ctx context.Context, db *tsdb.DB, spec *topNSpec, key rankKey, pt *wire.Point, stored bool) (*heldRanking, error) {
	sort := modelv1.Sort_SORT_ASC
	if key.desc {
		sort = modelv1.Sort_SORT_DESC
	}
	h := &heldRanking{spec: spec, key: key, tags: []*modelv1.TagValue{
		{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: spec.id}}},
		{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: int64(sort)}}},
		{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: int64(key.shard)}}},
	}}
	names := []string{topn.TagAgg, topn.TagSort, topn.TagShard}
	eq := map[string]*modelv1.TagValue{topn.TagAgg: h.tags[0], topn.TagSort: h.tags[1], topn.TagShard: h.tags[2]}
	for _, r := range spec.groupBy {
		v := nullTag()
		if raw := entityRaw(pt, r); raw != nil {
			v = new(modelv1.TagValue)
			if err := proto.Unmarshal(raw, v); err != nil {
				return nil, fmt.Errorf("storage: top-N aggregation %s: tag %s does not decode: %w", spec.id, r.name, err)
			}
		}
		h.tags = append(h.tags, v)
		names = append(names, r.name)
		eq[r.name] = v
	}
	rec, ok := seriesKey(spec.recordName(key.desc), names, eq)
	if !ok {
		return nil, fmt.Errorf("storage: top-N aggregation %s: no series key for its ranking", spec.id)
	}
	h.recordKey = rec
	for _, seg := range db.SegmentsIn(tsdb.KindMeasure, spec.group, key.window, key.window+1) {
		if !stored {
			break
		}
		err := db.ScanSegment(ctx, seg, tsdb.Scan{Name: spec.recordName(key.desc), Begin: key.window, End: key.window + 1, SeriesKey: rec}, func(it *tsdb.Item) error {
			var stored measurev1.DataPointValue
			if err := proto.Unmarshal(it.Payload, &stored); err != nil {
				return fmt.Errorf("storage: stored top-N ranking does not decode: %w", err)
			}
			r, err := topn.Unmarshal(fieldAt(stored.GetFields(), 0).GetBinaryData(), spec.counters, key.desc, it.Version)
			if err == nil {
				h.Ranking = r
			}
			return err
		})
		if err != nil {
			return nil, mapClosed(err)
		}
	}
	if h.Ranking == nil {
		h.Ranking = topn.NewRanking(spec.counters, key.desc)
	}
	a.rankings[key] = h
	wk := windowKey{spec.id, key.window}
	a.windows[wk] = append(a.windows[wk], key)
	return h, nil
}

// hasMarker reports whether a window of spec has rankings stored.
func (a *topNAggregator) hasMarker(ctx context.Context, db *tsdb.DB, spec *topNSpec, window int64) (bool, error) {
	found := false
	for _, seg := range db.SegmentsIn(tsdb.KindMeasure, spec.group, window, window+1) {
		err := db.ScanSegment(ctx, seg, tsdb.Scan{Name: spec.marker, Begin: window, End: window + 1, SeriesKey: spec.markerKey}, func(*tsdb.Item) error {
			found = true
			return nil
		})
		if err != nil {
			return false, mapClosed(err)
		}
	}
	return found, nil
}

// marker appends the marker record of a window of spec to dst, stored
// under a name of its own: no query of rankings reads it.
func marker(dst []byte, spec *topNSpec, window int64) []byte {
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, &measurev1.DataPointValue{
		Timestamp:   timestamppb.New(time.Unix(0, window)),
		TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: spec.id}}}}}},
	})
	if err != nil {
		panic(fmt.Sprintf("storage: a top-N marker does not encode: %v", err)) // only valid messages are built
	}
	return out
}

// record appends the record of the ranking as it is now to dst: a
// DataPointValue, encoded here as its fields are few and the ranking is
// copied in whole.
func (h *heldRanking) record(dst []byte) []byte {
	h.list = h.Marshal(h.list[:0], h.spec.names)
	v := &measurev1.DataPointValue{
		Timestamp:   timestamppb.New(time.Unix(0, h.key.window)),
		TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: h.tags}},
		Fields:      []*modelv1.FieldValue{{Value: &modelv1.FieldValue_BinaryData{BinaryData: h.list}}},
		Version:     h.Version,
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, v)
	if err != nil {
		panic(fmt.Sprintf("storage: a top-N record does not encode: %v", err)) // only valid messages are built
	}
	return out
}

// evict lets go of the rankings of windows older than their
// aggregation's lru_size newest.
func (a *topNAggregator) evict() {
	for wk, keys := range a.windows {
		if h := a.rankings[keys[0]]; h != nil && wk.window >= a.newest[wk.agg]-h.spec.windows*h.spec.interval {
			continue
		}
		if slices.ContainsFunc(keys, func(k rankKey) bool { return a.rankings[k].inflight > 0 }) {
			continue // the next eviction lets go of it
		}
		for _, k := range keys {
			delete(a.rankings, k)
		}
		delete(a.windows, wk)
		delete(a.stored, wk)
	}
}
