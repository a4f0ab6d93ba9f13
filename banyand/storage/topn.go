package storage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/aggregate"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/banyand/topn"
	"github.com/banyand-io/banyand/pkg/registry"
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
	s.topn = &topNAggregator{src: src, rankings: make(map[rankKey]*heldRanking), newest: make(map[string]int64)}
}

// topNAggregator maintains the rankings of a store. One batch at a time
// updates them (mu): the updates are a few map operations a write, and
// the rankings a batch changed are encoded into its own commit. Two
// batches' commits may land in either order; each stored ranking carries
// a version counting its changes and the higher version wins, as for any
// data point.
//
// A ranking lives in memory while its window is among the lru_size (at
// least 2) newest of its aggregation; a write to an older window, or the
// first write to a window after a restart, reads the stored ranking back
// first, so a ranking counts every acknowledged write whatever the order
// or the restarts. A batch whose commit fails has still been counted: its
// retry writes the same values.
type topNAggregator struct {
	src   TopNSchemas
	specs atomic.Pointer[topNSpecs]

	mu       sync.Mutex
	rankings map[rankKey]*heldRanking
	newest   map[string]int64 // an aggregation's newest window
}

// topNSpecs are the aggregations of one schema revision, by source measure.
type topNSpecs struct {
	rev      int64
	bySource map[schema.Key][]*topNSpec
}

// topNSpec is one aggregation resolved against its source measure.
type topNSpec struct {
	id       string
	group    string // the source measure's: where the records go
	field    int
	groupBy  []tagRef
	entity   []tagRef // the group-by tags, then the entity's
	match    predicate
	counters int
	sorts    []bool // desc, one ranking each
	interval int64
	windows  int64
}

type rankKey struct {
	agg    string
	desc   bool
	shard  uint32
	window int64
	group  string // the group-by values (aggregate.AppendKey)
}

type heldRanking struct {
	*topn.Ranking
	spec   *topNSpec
	key    rankKey
	record []byte // the record's series key
	tags   []*modelv1.TagValue
	dirty  bool
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
	spec := &topNSpec{id: topn.AggID(agg), group: m.GetMetadata().GetGroup(), field: -1, match: crit.match,
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
func (a *topNAggregator) observe(ctx context.Context, db *tsdb.DB, batch []tsdb.Write, ws []topNWrite) ([]tsdb.Write, error) {
	specs := a.current()
	if len(specs.bySource) == 0 {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var touched []*heldRanking
	var dp measurev1.DataPointValue
	var gk []byte
	advanced := false
	for _, o := range ws {
		w := &batch[o.at]
		list := specs.bySource[schema.Key{Group: w.Group, Name: w.Name}]
		if len(list) == 0 {
			continue
		}
		proto.Reset(&dp)
		if err := proto.Unmarshal(w.Value, &dp); err != nil {
			continue // stored as is; a query reports it
		}
		tfs := dp.GetTagFamilies()
		for _, spec := range list {
			v := fieldAt(dp.GetFields(), spec.field)
			if !numeric(v) || (spec.match != nil && !spec.match(tfs)) {
				continue
			}
			window := w.Timestamp - mod(w.Timestamp, spec.interval)
			gk = gk[:0]
			for _, r := range spec.groupBy {
				gk = aggregate.AppendKey(gk, answered(lookup(tfs, r)))
			}
			entity := func() []*modelv1.Tag {
				out := make([]*modelv1.Tag, len(spec.entity))
				for i, r := range spec.entity {
					out[i] = &modelv1.Tag{Key: r.name, Value: proto.CloneOf(answered(lookup(tfs, r)))}
				}
				return out
			}
			for _, desc := range spec.sorts {
				key := rankKey{agg: spec.id, desc: desc, shard: o.shard, window: window, group: string(gk)}
				r := a.rankings[key]
				if r == nil {
					var err error
					if r, err = a.load(ctx, db, spec, key, tfs); err != nil {
						return nil, err
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
	out := make([]tsdb.Write, 0, len(touched))
	for _, r := range touched {
		r.dirty = false
		r.Version++
		w, err := r.write()
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	if advanced {
		a.evict()
	}
	return out, nil
}

func numeric(v *modelv1.FieldValue) bool {
	switch v.GetValue().(type) {
	case *modelv1.FieldValue_Int, *modelv1.FieldValue_Float:
		return true
	}
	return false
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
// there is one, and holds it.
func (a *topNAggregator) load(ctx context.Context, db *tsdb.DB, spec *topNSpec, key rankKey, tfs []*modelv1.TagFamilyForWrite) (*heldRanking, error) {
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
		v := proto.CloneOf(orNull(answered(lookup(tfs, r))))
		h.tags = append(h.tags, v)
		names = append(names, r.name)
		eq[r.name] = v
	}
	rec, ok := seriesKey(topn.ResultName, names, eq)
	if !ok {
		return nil, fmt.Errorf("storage: top-N aggregation %s: no series key for its ranking", spec.id)
	}
	h.record = rec
	for _, seg := range db.SegmentsIn(tsdb.KindMeasure, spec.group, key.window, key.window+1) {
		err := db.ScanSegment(ctx, seg, tsdb.Scan{Name: topn.ResultName, Begin: key.window, End: key.window + 1, SeriesKey: rec}, func(it *tsdb.Item) error {
			var stored measurev1.DataPointValue
			if err := proto.Unmarshal(it.Payload, &stored); err != nil {
				return fmt.Errorf("storage: stored top-N ranking does not decode: %w", err)
			}
			r, err := topn.Unmarshal(fieldAt(stored.GetFields(), 0).GetBinaryData(), fieldAt(stored.GetFields(), 1).GetBinaryData(),
				spec.counters, key.desc, it.Version)
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
	return h, nil
}

// write is the record of the ranking as it is now.
func (h *heldRanking) write() (tsdb.Write, error) {
	list, series, err := h.Marshal(h.key.window)
	if err != nil {
		return tsdb.Write{}, err
	}
	v, err := proto.Marshal(&measurev1.DataPointValue{
		Timestamp:   timestamppb.New(time.Unix(0, h.key.window)),
		TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: h.tags}},
		Fields: []*modelv1.FieldValue{
			{Value: &modelv1.FieldValue_BinaryData{BinaryData: list}},
			{Value: &modelv1.FieldValue_BinaryData{BinaryData: series}},
		},
		Version: h.Version,
	})
	if err != nil {
		return tsdb.Write{}, err
	}
	return tsdb.Write{Kind: tsdb.KindMeasure, Group: h.spec.group, Name: topn.ResultName, SeriesKey: h.record,
		Timestamp: h.key.window, Version: h.Version, Value: v}, nil
}

// evict lets go of the rankings of windows older than their
// aggregation's lru_size newest.
func (a *topNAggregator) evict() {
	for k, h := range a.rankings {
		if k.window < a.newest[k.agg]-h.spec.windows*h.spec.interval {
			delete(a.rankings, k)
		}
	}
}
