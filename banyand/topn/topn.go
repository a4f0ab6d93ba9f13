// Package topn holds what the write-time answer of MeasureService.TopN
// shares between the data node that maintains it and the liaison that
// reads it: the bounded ranking of one window, and the record a ranking is
// stored as.
//
// A data node keeps, for each TopNAggregation, each window of the source
// measure's interval, each shard and each value of the group-by tags, a
// Ranking of at most counters_number series by the aggregation's field,
// the latest point of a series in the window counting. Each write batch
// stores the rankings it changed as records of a measure named ResultName
// in the source measure's group (the segment of the data they rank), in
// the batch's own commit: a ranking is as durable as the writes it counts.
package topn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/aggregate"
)

// ResultName is the name the rankings are stored under, in the source
// measure's group, as BanyanDB's _top_n_result measure.
const ResultName = "_top_n_result"

// The record's tags, in order: the aggregation ("group/name"), the sort
// (modelv1.Sort), the shard, then the aggregation's group-by tags under
// their own names. Its fields: the ranking (a marshalled TopNList) and
// the series keys of its items.
const (
	TagFamily   = "_topn"
	TagAgg      = "_topn_aggregation"
	TagSort     = "_topn_sort"
	TagShard    = "_topn_shard"
	FieldList   = "ranking"
	FieldSeries = "series"
)

// AggID names an aggregation in its records.
func AggID(agg *databasev1.TopNAggregation) string {
	return agg.GetMetadata().GetGroup() + "/" + agg.GetMetadata().GetName()
}

// ResultSchema is the measure schema the records of agg (whose source is
// m) are read with.
func ResultSchema(agg *databasev1.TopNAggregation, m *databasev1.Measure) *databasev1.Measure {
	tags := []*databasev1.TagSpec{
		{Name: TagAgg, Type: databasev1.TagType_TAG_TYPE_STRING},
		{Name: TagSort, Type: databasev1.TagType_TAG_TYPE_INT},
		{Name: TagShard, Type: databasev1.TagType_TAG_TYPE_INT},
	}
	entity := []string{TagAgg, TagSort, TagShard}
	for _, name := range agg.GetGroupByTagNames() {
		spec := &databasev1.TagSpec{Name: name, Type: databasev1.TagType_TAG_TYPE_STRING}
		for _, f := range m.GetTagFamilies() {
			for _, t := range f.GetTags() {
				if t.GetName() == name {
					spec = proto.CloneOf(t)
				}
			}
		}
		tags = append(tags, spec)
		entity = append(entity, name)
	}
	return &databasev1.Measure{
		Metadata:    &commonv1.Metadata{Group: m.GetMetadata().GetGroup(), Name: ResultName},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: TagFamily, Tags: tags}},
		Fields: []*databasev1.FieldSpec{
			{Name: FieldList, FieldType: databasev1.FieldType_FIELD_TYPE_DATA_BINARY},
			{Name: FieldSeries, FieldType: databasev1.FieldType_FIELD_TYPE_DATA_BINARY},
		},
		Entity:   &databasev1.Entity{TagNames: entity},
		Interval: m.GetInterval(),
	}
}

// Entry is one series of a ranking.
type Entry struct {
	// Series is the series' key: it identifies the series.
	Series string
	// Entity names the series: the group-by tags, then the entity's.
	Entity []*modelv1.Tag
	Value  *modelv1.FieldValue
	num    float64
	// Timestamp and Version are the point's that set Value: a later point
	// of the window (or the same point, written with a version at least as
	// high) replaces it.
	Timestamp, Version int64
}

// Ranking is the bounded ranking of one window: at most Cap series, best
// first (highest value when Desc, else lowest), ties in arrival order.
// A series once pushed out is forgotten: if a series in the ranking is
// overwritten with a worse value, a forgotten one that is now better is
// not brought back (the price of the bound). Not safe for concurrent use.
type Ranking struct {
	Cap  int
	Desc bool
	// Version counts the changes: the record a change stores has it, so
	// that of two commits of a ranking racing the newer one wins.
	Version  int64
	entries  []*Entry
	bySeries map[string]*Entry
}

// NewRanking returns an empty ranking of at most capacity series.
func NewRanking(capacity int, desc bool) *Ranking {
	return &Ranking{Cap: max(capacity, 1), Desc: desc, bySeries: make(map[string]*Entry)}
}

// Entries returns the ranking, best first. The slice is the ranking's own.
func (r *Ranking) Entries() []*Entry { return r.entries }

func (r *Ranking) better(a, b float64) bool {
	if r.Desc {
		return a > b
	}
	return a < b
}

// Put counts the point (ts, version) of series with value v; entity is
// called only when the series enters the ranking. It reports whether the
// ranking changed.
func (r *Ranking) Put(series []byte, ts, version int64, v *modelv1.FieldValue, entity func() []*modelv1.Tag) bool {
	num := aggregate.Numeric(v)
	if e, ok := r.bySeries[string(series)]; ok {
		if ts < e.Timestamp || (ts == e.Timestamp && version < e.Version) {
			return false
		}
		r.remove(e)
		e.Value, e.num, e.Timestamp, e.Version = v, num, ts, version
		r.insert(e)
		return true
	}
	if len(r.entries) >= r.Cap {
		worst := r.entries[len(r.entries)-1]
		if !r.better(num, worst.num) {
			return false
		}
		r.remove(worst)
		delete(r.bySeries, worst.Series)
	}
	e := &Entry{Series: string(series), Entity: entity(), Value: v, num: num, Timestamp: ts, Version: version}
	r.bySeries[e.Series] = e
	r.insert(e)
	return true
}

// insert places e after the entries at least as good.
func (r *Ranking) insert(e *Entry) {
	i := sort.Search(len(r.entries), func(i int) bool { return r.better(e.num, r.entries[i].num) })
	r.entries = slices.Insert(r.entries, i, e)
}

func (r *Ranking) remove(e *Entry) {
	i := sort.Search(len(r.entries), func(i int) bool { return !r.better(r.entries[i].num, e.num) })
	for ; i < len(r.entries); i++ {
		if r.entries[i] == e {
			r.entries = slices.Delete(r.entries, i, i+1)
			return
		}
	}
}

// Marshal encodes the ranking as the record's two fields: the list
// (timestamp ts) and its items' series keys.
func (r *Ranking) Marshal(ts int64) (list, series []byte, err error) {
	l := &measurev1.TopNList{Items: make([]*measurev1.TopNList_Item, len(r.entries))}
	for i, e := range r.entries {
		l.Items[i] = &measurev1.TopNList_Item{Entity: e.Entity, Value: e.Value, Version: e.Version, Timestamp: nanosToPB(e.Timestamp)}
		series = binary.AppendUvarint(series, uint64(len(e.Series)))
		series = append(series, e.Series...)
	}
	list, err = proto.Marshal(l)
	return list, series, err
}

// Unmarshal is Marshal's inverse: the ranking of a stored record, at
// version, of at most capacity series.
func Unmarshal(list, series []byte, capacity int, desc bool, version int64) (*Ranking, error) {
	var l measurev1.TopNList
	if err := proto.Unmarshal(list, &l); err != nil {
		return nil, fmt.Errorf("topn: stored ranking does not decode: %w", err)
	}
	r := NewRanking(capacity, desc)
	r.Version = version
	for _, it := range l.GetItems() {
		n, k := binary.Uvarint(series)
		if k <= 0 || uint64(len(series)-k) < n {
			return nil, errors.New("topn: stored ranking's series keys are truncated")
		}
		key := series[k : k+int(n)]
		series = series[k+int(n):]
		ts := it.GetTimestamp().AsTime().UnixNano()
		r.Put(key, ts, it.GetVersion(), it.GetValue(), func() []*modelv1.Tag { return it.GetEntity() })
	}
	return r, nil
}

func nanosToPB(ts int64) *timestamppb.Timestamp { return timestamppb.New(time.Unix(0, ts)) }
