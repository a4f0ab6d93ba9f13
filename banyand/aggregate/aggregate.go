// Package aggregate folds measure data points into the partial aggregates
// of a query's groups: the encoding of a group's key, the statistics a
// MEAN, MAX, MIN, COUNT or SUM is computed from, and the order that says
// which point of a group comes first. The data nodes fold the points of
// the shards they answer for; the liaison merges the partials and computes
// the answer, so both sides share this one definition.
package aggregate

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// MaxGroups bounds the groups one query folds on one data node: each
// costs a key, a first point and its statistics in memory.
const MaxGroups = 100_000

// ErrTooManyGroups is returned past MaxGroups.
var ErrTooManyGroups = fmt.Errorf("too many groups (more than %d on one data node); narrow the time range, the criteria or the group-by tags", MaxGroups)

// ErrFunction is an aggregation function that is not one of MEAN, MAX,
// MIN, COUNT, SUM.
var ErrFunction = errors.New("aggregation function is not one of MEAN, MAX, MIN, COUNT, SUM")

// AppendKey appends the encoding of one group-by tag value to dst. Values
// of different kinds never encode alike, and a missing tag (or one of
// another kind than string and int) encodes as a null: such points group
// together.
func AppendKey(dst []byte, v *modelv1.TagValue) []byte {
	switch x := v.GetValue().(type) {
	case *modelv1.TagValue_Str:
		return AppendStrKey(dst, x.Str.GetValue())
	case *modelv1.TagValue_Int:
		return AppendIntKey(dst, x.Int.GetValue())
	default:
		return AppendNullKey(dst)
	}
}

// AppendStrKey is AppendKey of a string tag.
func AppendStrKey[S string | []byte](dst []byte, s S) []byte {
	dst = append(dst, 's')
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendIntKey is AppendKey of an int tag.
func AppendIntKey(dst []byte, i int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(i))
}

// AppendNullKey is AppendKey of a null or missing tag.
func AppendNullKey(dst []byte) []byte { return append(dst, 'n') }

// Stats are what an aggregation of a field over a group is computed
// from: the points that have the field, counted, summed and bounded, as
// ints and as floats (a float field's values truncated, an int field's
// converted), so that either answer type stays exact.
type Stats struct {
	Count              uint64
	IntSum             int64
	IntMin, IntMax     int64
	FloatSum           float64
	FloatMin, FloatMax float64
}

// Add counts v; a value that is not a number (a point written without
// the field) does not count.
func (s *Stats) Add(v *modelv1.FieldValue) {
	switch x := v.GetValue().(type) {
	case *modelv1.FieldValue_Int:
		s.AddInt(x.Int.GetValue())
	case *modelv1.FieldValue_Float:
		s.AddFloat(x.Float.GetValue())
	}
}

// AddInt counts an int value.
func (s *Stats) AddInt(i int64) { s.add(i, float64(i)) }

// AddFloat counts a float value.
func (s *Stats) AddFloat(f float64) { s.add(int64(f), f) }

func (s *Stats) add(i int64, f float64) {
	s.Merge(Stats{Count: 1, IntSum: i, IntMin: i, IntMax: i, FloatSum: f, FloatMin: f, FloatMax: f})
}

// Merge adds o's points to s.
func (s *Stats) Merge(o Stats) {
	if o.Count == 0 {
		return
	}
	if s.Count == 0 {
		*s = o
		return
	}
	s.Count += o.Count
	s.IntSum += o.IntSum
	s.FloatSum += o.FloatSum
	s.IntMin, s.IntMax = min(s.IntMin, o.IntMin), max(s.IntMax, o.IntMax)
	s.FloatMin, s.FloatMax = min(s.FloatMin, o.FloatMin), max(s.FloatMax, o.FloatMax)
}

// Result is fn over the group, as BanyanDB computes it: in the field's
// type (float or int); MEAN of ints divides as integers and the mean of a
// non-empty group is never below 1 (its aggregation's floor, which its
// clients rely on); an empty group's aggregate is 0.
func (s Stats) Result(fn modelv1.AggregationFunction, float bool) (*modelv1.FieldValue, error) {
	var f float64
	var i int64
	switch fn {
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM:
		f, i = s.FloatSum, s.IntSum
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_COUNT:
		f, i = float64(s.Count), int64(s.Count)
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX:
		f, i = s.FloatMax, s.IntMax
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_MIN:
		f, i = s.FloatMin, s.IntMin
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN:
		if s.Count > 0 {
			f, i = max(s.FloatSum/float64(s.Count), 1), max(s.IntSum/int64(s.Count), 1)
		}
	default:
		return nil, fmt.Errorf("%w: %v", ErrFunction, fn)
	}
	if float {
		return &modelv1.FieldValue{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: f}}}, nil
	}
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: i}}}, nil
}

// StatsOf reads the statistics of a data node's partial.
func StatsOf(p *clusterv1.MeasurePartial) Stats {
	return Stats{
		Count: p.GetCount(), IntSum: p.GetIntSum(), IntMin: p.GetIntMin(), IntMax: p.GetIntMax(),
		FloatSum: p.GetFloatSum(), FloatMin: p.GetFloatMin(), FloatMax: p.GetFloatMax(),
	}
}

// Fill writes s into p.
func (s Stats) Fill(p *clusterv1.MeasurePartial) {
	p.Count, p.IntSum, p.IntMin, p.IntMax = s.Count, s.IntSum, s.IntMin, s.IntMax
	p.FloatSum, p.FloatMin, p.FloatMax = s.FloatSum, s.FloatMin, s.FloatMax
}

// Position is where a point comes in a query's order: by time (ascending,
// or descending when the query says SORT_DESC), then by the measure's
// group name, then by series id.
type Position struct {
	Ts    int64
	Group string
	Sid   uint64
}

// Compare orders a and b; desc reverses only the time.
func Compare(a, b Position, desc bool) int {
	c := cmp.Compare(a.Ts, b.Ts)
	if desc {
		c = -c
	}
	return cmp.Or(c, cmp.Compare(a.Group, b.Group), cmp.Compare(a.Sid, b.Sid))
}

// Numeric is a field value as a number for ranking; not a number is 0.
func Numeric(v *modelv1.FieldValue) float64 {
	switch x := v.GetValue().(type) {
	case *modelv1.FieldValue_Int:
		return float64(x.Int.GetValue())
	case *modelv1.FieldValue_Float:
		return x.Float.GetValue()
	}
	return 0
}

// Index finds groups by key, up to MaxGroups of them.
type Index struct {
	byKey map[string]int
}

// Find returns the number of the group of key, adding it as the next
// number when it is new (added says so), or ErrTooManyGroups past
// MaxGroups.
func (x *Index) Find(key []byte) (n int, added bool, err error) {
	if i, ok := x.byKey[string(key)]; ok {
		return i, false, nil
	}
	if x.byKey == nil {
		x.byKey = map[string]int{}
	}
	if len(x.byKey) >= MaxGroups {
		return 0, false, ErrTooManyGroups
	}
	n = len(x.byKey)
	x.byKey[string(key)] = n
	return n, true, nil
}
