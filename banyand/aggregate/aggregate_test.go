package aggregate

import (
	"errors"
	"strconv"
	"testing"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

func ival(i int64) *modelv1.FieldValue {
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: i}}}
}

func fval(f float64) *modelv1.FieldValue {
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: f}}}
}

// Partials merged in any split give the aggregate of all the points.
func TestStatsMergeAndResult(t *testing.T) {
	ints := []int64{5, -3, 9, 0, 2}
	for split := range len(ints) + 1 {
		var a, b Stats
		for i, v := range ints {
			if i < split {
				a.Add(ival(v))
			} else {
				b.Add(ival(v))
			}
		}
		b.Add(&modelv1.FieldValue{}) // a point without the field does not count
		a.Merge(b)
		for fn, want := range map[modelv1.AggregationFunction]int64{
			modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM:   13,
			modelv1.AggregationFunction_AGGREGATION_FUNCTION_COUNT: 5,
			modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX:   9,
			modelv1.AggregationFunction_AGGREGATION_FUNCTION_MIN:   -3,
			modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN:  2,
		} {
			got, err := a.Result(fn, false)
			if err != nil || got.GetInt().GetValue() != want {
				t.Errorf("split %d %v = %v, %v; want %d", split, fn, got, err, want)
			}
		}
	}
	// The mean of a non-empty group is never below 1; an empty group's is 0.
	var low, empty Stats
	low.Add(fval(0.25))
	low.Add(fval(0.5))
	if got, _ := low.Result(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN, true); got.GetFloat().GetValue() != 1 {
		t.Errorf("mean of small floats = %v, want 1", got)
	}
	if got, _ := empty.Result(modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN, false); got.GetInt().GetValue() != 0 {
		t.Errorf("mean of nothing = %v, want 0", got)
	}
	if _, err := low.Result(modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED, false); !errors.Is(err, ErrFunction) {
		t.Errorf("unspecified function: %v", err)
	}
}

// Keys of different values, kinds or splits never collide.
func TestAppendKey(t *testing.T) {
	str := func(s string) *modelv1.TagValue {
		return &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: s}}}
	}
	in := func(i int64) *modelv1.TagValue {
		return &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: i}}}
	}
	keys := map[string]string{}
	for name, vs := range map[string][]*modelv1.TagValue{
		"ab,c": {str("ab"), str("c")}, "a,bc": {str("a"), str("bc")}, "1": {in(1)}, "'1'": {str("1")},
		"null": {nil}, "''": {str("")}, "0": {in(0)},
	} {
		var k []byte
		for _, v := range vs {
			k = AppendKey(k, v)
		}
		if other, dup := keys[string(k)]; dup {
			t.Errorf("%s and %s share key %q", name, other, k)
		}
		keys[string(k)] = name
	}
}

// The index refuses the group past MaxGroups, naming the bound.
func TestIndexBound(t *testing.T) {
	var x Index
	for i := range MaxGroups {
		if n, added, err := x.Find([]byte(strconv.Itoa(i))); err != nil || !added || n != i {
			t.Fatalf("group %d: %d %v %v", i, n, added, err)
		}
	}
	if n, added, err := x.Find([]byte("0")); err != nil || added || n != 0 {
		t.Fatalf("known group: %d %v %v", n, added, err)
	}
	if _, _, err := x.Find([]byte("new")); !errors.Is(err, ErrTooManyGroups) {
		t.Fatalf("past the bound: %v", err)
	}
}
