// Package topn holds what the write-time answer of MeasureService.TopN
// shares between the data node that maintains it and the liaison that
// reads it: the bounded ranking of one window, and the record a ranking is
// stored as.
//
// A data node keeps, for each TopNAggregation, each window of the source
// measure's interval, each shard and each value of the group-by tags, a
// Ranking of at most counters_number series by the aggregation's field,
// the latest point of a series in the window counting. Each write batch
// stores the rankings it changed as records of a measure named
// RecordName in the source measure's group (the segment of the data they rank), in
// the batch's own commit: a ranking is as durable as the writes it counts.
package topn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// ResultName is the stem of the names the rankings are stored under (see
// RecordName), in the source measure's group, after BanyanDB's
// _top_n_result measure.
const ResultName = "_top_n_result"

// The record's tags, in order: the aggregation ("group/name"), the sort
// (modelv1.Sort), the shard, then the aggregation's group-by tags under
// their own names. Its field: the ranking (Ranking.Marshal).
const (
	TagFamily = "_topn"
	TagAgg    = "_topn_aggregation"
	TagSort   = "_topn_sort"
	TagShard  = "_topn_shard"
	FieldList = "ranking"
)

// AggID names an aggregation in its records.
func AggID(agg *databasev1.TopNAggregation) string {
	return agg.GetMetadata().GetGroup() + "/" + agg.GetMetadata().GetName()
}

// RecordName is the name the rankings of an aggregation kept sort's way
// are stored under: their own, so that reading them reads nothing else.
func RecordName(aggID string, sort modelv1.Sort) string {
	if sort == modelv1.Sort_SORT_ASC {
		return MarkerName(aggID) + "/asc"
	}
	return MarkerName(aggID) + "/desc"
}

// MarkerName is the name of the markers of the windows an aggregation
// has rankings stored of.
func MarkerName(aggID string) string { return ResultName + "/" + aggID }

// IsRecordName reports whether a measure name is a RecordName.
func IsRecordName(name string) bool { return strings.HasPrefix(name, ResultName+"/") }

// ResultSchema is the measure schema the records of agg (whose source is
// m) kept sort's way are read with.
func ResultSchema(agg *databasev1.TopNAggregation, m *databasev1.Measure, sort modelv1.Sort) *databasev1.Measure {
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
		Metadata:    &commonv1.Metadata{Group: m.GetMetadata().GetGroup(), Name: RecordName(AggID(agg), sort)},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: TagFamily, Tags: tags}},
		Fields:      []*databasev1.FieldSpec{{Name: FieldList, FieldType: databasev1.FieldType_FIELD_TYPE_DATA_BINARY}},
		Entity:      &databasev1.Entity{TagNames: entity},
		Interval:    m.GetInterval(),
	}
}

// Value is a ranked field's value: an int, or a float when Float.
type Value struct {
	Int   int64
	F     float64
	Float bool
}

func (v Value) num() float64 {
	if v.Float {
		return v.F
	}
	return float64(v.Int)
}

// FieldValue is v as a query answers it.
func (v Value) FieldValue() *modelv1.FieldValue {
	if v.Float {
		return &modelv1.FieldValue{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: v.F}}}
	}
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: v.Int}}}
}

// Entry is one series of a ranking.
type Entry struct {
	// Series is the series' key: it identifies the series.
	Series string
	// Entity names the series (see AppendEntityValue): the group-by tags,
	// then the entity's.
	Entity []byte
	Value  Value
	num    float64
	// Timestamp and Version are the point's that set Value: a later point
	// of the window (or the same point, written with a version at least as
	// high) replaces it.
	Timestamp, Version int64
}

// AppendEntityValue appends a tag value naming a series to an entry's
// Entity: raw is a marshalled model.v1.TagValue, empty for a null (an
// empty string or binary value is one too, as queries read them back).
func AppendEntityValue(dst, raw []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(raw)))
	return append(dst, raw...)
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

// Put counts the point (ts, version) of series with value v; entity
// (the Entity bytes) is called only when the series enters the ranking.
// It reports whether the ranking changed.
func (r *Ranking) Put(series []byte, ts, version int64, v Value, entity func() []byte) bool {
	num := v.num()
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

// Marshal appends the ranking's encoding (the record's field) to dst:
// the names of the entity tags, then each entry best first: its series
// key, entity values, value, timestamp and version. Entity values are
// copied as written, not re-encoded.
func (r *Ranking) Marshal(dst []byte, names []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, n := range names {
		dst = binary.AppendUvarint(dst, uint64(len(n)))
		dst = append(dst, n...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.entries)))
	for _, e := range r.entries {
		dst = binary.AppendUvarint(dst, uint64(len(e.Series)))
		dst = append(dst, e.Series...)
		dst = binary.AppendUvarint(dst, uint64(len(e.Entity)))
		dst = append(dst, e.Entity...)
		if e.Value.Float {
			dst = append(dst, 1)
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(e.Value.F))
		} else {
			dst = append(dst, 0)
			dst = binary.AppendVarint(dst, e.Value.Int)
		}
		dst = binary.AppendVarint(dst, e.Timestamp)
		dst = binary.AppendVarint(dst, e.Version)
	}
	return dst
}

var errTruncated = errors.New("topn: stored ranking is truncated")

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errTruncated, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = errTruncated, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if uint64(len(r.b)) < n {
		r.err, r.b = errTruncated, nil
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// Each calls fn with the entity tag names and each entry of an encoded
// ranking, best first; the entry's slices alias b, and it is valid only
// during the call.
func Each(b []byte, fn func(names []string, e *Entry) error) error {
	r := &reader{b: b}
	names := make([]string, r.uvarint())
	for i := range names {
		names[i] = string(r.bytes())
	}
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		e := &Entry{Series: string(r.bytes()), Entity: r.bytes()}
		if len(r.b) < 1 {
			return errTruncated
		}
		kind := r.b[0]
		r.b = r.b[1:]
		if kind == 1 {
			if len(r.b) < 8 {
				return errTruncated
			}
			e.Value = Value{F: math.Float64frombits(binary.BigEndian.Uint64(r.b)), Float: true}
			r.b = r.b[8:]
		} else {
			e.Value = Value{Int: r.varint()}
		}
		e.Timestamp, e.Version = r.varint(), r.varint()
		if r.err != nil {
			break
		}
		if err := fn(names, e); err != nil {
			return err
		}
	}
	return r.err
}

// Unmarshal is Marshal's inverse: the ranking of a stored record, at
// version, of at most capacity series.
func Unmarshal(b []byte, capacity int, desc bool, version int64) (*Ranking, error) {
	r := NewRanking(capacity, desc)
	r.Version = version
	err := Each(b, func(_ []string, e *Entry) error {
		entity := bytes.Clone(e.Entity)
		r.Put([]byte(e.Series), e.Timestamp, e.Version, e.Value, func() []byte { return entity })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Items returns the entries of an encoded ranking as a TopNList's items,
// best first.
func Items(b []byte) ([]*measurev1.TopNList_Item, error) {
	var out []*measurev1.TopNList_Item
	err := Each(b, func(names []string, e *Entry) error {
		it := &measurev1.TopNList_Item{Value: e.Value.FieldValue(), Version: e.Version, Timestamp: nanosToPB(e.Timestamp)}
		var err error
		if it.Entity, err = EntityTags(names, e.Entity); err != nil {
			return err
		}
		out = append(out, it)
		return nil
	})
	return out, err
}

// EntityTags are the tags named by an entry's Entity.
func EntityTags(names []string, entity []byte) ([]*modelv1.Tag, error) {
	r := &reader{b: entity}
	out := make([]*modelv1.Tag, 0, len(names))
	for _, name := range names {
		raw := r.bytes()
		v := &modelv1.TagValue{Value: &modelv1.TagValue_Null{}}
		if len(raw) > 0 {
			v = &modelv1.TagValue{}
			if err := proto.Unmarshal(raw, v); err != nil {
				return nil, fmt.Errorf("topn: a stored entity value does not decode: %w", err)
			}
		}
		out = append(out, &modelv1.Tag{Key: name, Value: v})
	}
	return out, r.err
}

func nanosToPB(ts int64) *timestamppb.Timestamp { return timestamppb.New(time.Unix(0, ts)) }
