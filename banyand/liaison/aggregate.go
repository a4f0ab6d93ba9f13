package liaison

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
)

// A measure query's group_by, agg and top run in the liaison, over the
// data points of its time range with their copies removed, in BanyanDB's
// order: group the points by the group-by tags (groups in the order their
// first point comes in the query's time order), aggregate a field over
// each group (or over all points without group_by), keep the top N by a
// field, then apply offset and limit. An aggregated point carries the tags
// of its group's first point and one field, the aggregate, named after the
// aggregated field; no timestamp. A group without agg is its first point.
//
// The data nodes send the points whole rather than partial aggregates: a
// point may be on several nodes (replicas, a re-placed write), and only
// the liaison sees all copies to keep the one with the highest version;
// partial sums of copies would count them twice.

// maxTopN bounds top.number.
const maxTopN = schema.MaxQueryWindow

// shaping is a validated group_by/agg/top of a measure query.
type shaping struct {
	groupBy  [][2]string // (family, tag) of the group-by tags
	agg      modelv1.AggregationFunction
	aggField string
	aggFloat bool // the aggregated field is a float
	top      *measurev1.QueryRequest_Top
}

// needsShaping reports whether req asks for group_by, agg or top.
func needsShaping(req *measurev1.QueryRequest) bool {
	return req.GetGroupBy() != nil || req.GetAgg() != nil || req.GetTop() != nil
}

// newShaping checks req's group_by, agg and top against the measure's
// schema in every group asked (defs), as InvalidArgument naming what is
// wrong.
func newShaping(req *measurev1.QueryRequest, defs []*databasev1.Measure) (*shaping, error) {
	sh := &shaping{}
	for _, fam := range req.GetGroupBy().GetTagProjection().GetTagFamilies() {
		for _, tag := range fam.GetTags() {
			for _, def := range defs {
				tt, ok := tagType(def, fam.GetName(), tag)
				if !ok {
					return nil, status.Errorf(codes.InvalidArgument, "group_by: measure %s/%s has no tag %s.%s",
						def.GetMetadata().GetGroup(), def.GetMetadata().GetName(), fam.GetName(), tag)
				}
				switch tt {
				case databasev1.TagType_TAG_TYPE_STRING, databasev1.TagType_TAG_TYPE_INT:
				default:
					return nil, status.Errorf(codes.InvalidArgument, "group_by: tag %s.%s is a %s; only string and int tags group", fam.GetName(), tag, tt)
				}
			}
			sh.groupBy = append(sh.groupBy, [2]string{fam.GetName(), tag})
		}
	}
	if req.GetGroupBy() != nil && len(sh.groupBy) == 0 {
		return nil, status.Error(codes.InvalidArgument, "group_by: names no tag")
	}
	if a := req.GetAgg(); a != nil {
		if a.GetFunction() == modelv1.AggregationFunction_AGGREGATION_FUNCTION_UNSPECIFIED ||
			modelv1.AggregationFunction_name[int32(a.GetFunction())] == "" {
			return nil, status.Errorf(codes.InvalidArgument, "agg: function %v is not one of MEAN, MAX, MIN, COUNT, SUM", a.GetFunction())
		}
		float, err := numericField(defs, "agg", a.GetFieldName())
		if err != nil {
			return nil, err
		}
		sh.agg, sh.aggField, sh.aggFloat = a.GetFunction(), a.GetFieldName(), float
	}
	if t := req.GetTop(); t != nil {
		if t.GetNumber() <= 0 || t.GetNumber() > maxTopN {
			return nil, status.Errorf(codes.InvalidArgument, "top: number %d is not within 1..%d", t.GetNumber(), maxTopN)
		}
		if sh.aggField != "" && t.GetFieldName() != sh.aggField {
			return nil, status.Errorf(codes.InvalidArgument, "top: field %q is not the aggregated field %q", t.GetFieldName(), sh.aggField)
		}
		if _, err := numericField(defs, "top", t.GetFieldName()); err != nil {
			return nil, err
		}
		sh.top = t
	}
	return sh, nil
}

// numericField checks that every measure asked has field name, an int or
// a float, and reports whether it is a float.
func numericField(defs []*databasev1.Measure, what, name string) (float bool, err error) {
	if name == "" {
		return false, status.Errorf(codes.InvalidArgument, "%s: field_name is required", what)
	}
	for _, def := range defs {
		i := slices.IndexFunc(def.GetFields(), func(f *databasev1.FieldSpec) bool { return f.GetName() == name })
		if i < 0 {
			return false, status.Errorf(codes.InvalidArgument, "%s: measure %s/%s has no field %q",
				what, def.GetMetadata().GetGroup(), def.GetMetadata().GetName(), name)
		}
		switch ft := def.GetFields()[i].GetFieldType(); ft {
		case databasev1.FieldType_FIELD_TYPE_INT:
		case databasev1.FieldType_FIELD_TYPE_FLOAT:
			float = true
		default:
			return false, status.Errorf(codes.InvalidArgument, "%s: field %q is a %s; only int and float fields aggregate", what, name, ft)
		}
	}
	return float, nil
}

func tagType(def *databasev1.Measure, family, tag string) (databasev1.TagType, bool) {
	for _, f := range def.GetTagFamilies() {
		if f.GetName() != family {
			continue
		}
		for _, t := range f.GetTags() {
			if t.GetName() == tag {
				return t.GetType(), true
			}
		}
	}
	return 0, false
}

// nodeRequest is what the data nodes are asked for a shaped query: every
// point of the range (up to the query window), with the group-by tags and
// the aggregated and ranked fields whether projected or not.
func (sh *shaping) nodeRequest(req *measurev1.QueryRequest) *measurev1.QueryRequest {
	out := proto.CloneOf(req)
	out.GroupBy, out.Agg, out.Top = nil, nil, nil
	out.Offset, out.Limit = 0, schema.MaxQueryWindow
	for _, ft := range sh.groupBy {
		out.TagProjection = projectTag(out.TagProjection, ft[0], ft[1])
	}
	for _, f := range []string{sh.aggField, sh.top.GetFieldName()} {
		if f != "" && !slices.Contains(out.GetFieldProjection().GetNames(), f) {
			if out.FieldProjection == nil {
				out.FieldProjection = &measurev1.QueryRequest_FieldProjection{}
			}
			out.FieldProjection.Names = append(out.FieldProjection.Names, f)
		}
	}
	return out
}

func projectTag(p *modelv1.TagProjection, family, tag string) *modelv1.TagProjection {
	if p == nil {
		p = &modelv1.TagProjection{}
	}
	for _, f := range p.GetTagFamilies() {
		if f.GetName() == family {
			if !slices.Contains(f.GetTags(), tag) {
				f.Tags = append(f.Tags, tag)
			}
			return p
		}
	}
	p.TagFamilies = append(p.TagFamilies, &modelv1.TagProjection_TagFamily{Name: family, Tags: []string{tag}})
	return p
}

// apply shapes points, in the query's time order, into the answer; req is
// the client's request, whose projections the answer keeps.
func (sh *shaping) apply(req *measurev1.QueryRequest, points []*measurev1.DataPoint) ([]*measurev1.DataPoint, error) {
	groups := sh.group(points)
	var out []*measurev1.DataPoint
	for _, g := range groups {
		if sh.aggField == "" {
			out = append(out, project(req, g[0]))
			continue
		}
		v, err := sh.aggregate(g)
		if err != nil {
			return nil, err
		}
		out = append(out, &measurev1.DataPoint{
			TagFamilies: project(req, g[0]).GetTagFamilies(),
			Fields:      []*measurev1.DataPoint_Field{{Name: sh.aggField, Value: v}},
		})
	}
	if sh.top != nil {
		out = topN(out, sh.top)
	}
	return page(out, req.GetOffset(), req.GetLimit(), schema.DefaultMeasureLimit), nil
}

// group splits points by their group-by tag values, groups in the order
// of their first point; without group_by, all points are one group for
// agg, and each point its own otherwise (top alone ranks points).
func (sh *shaping) group(points []*measurev1.DataPoint) [][]*measurev1.DataPoint {
	if len(sh.groupBy) == 0 {
		if sh.aggField == "" {
			out := make([][]*measurev1.DataPoint, len(points))
			for i, p := range points {
				out[i] = []*measurev1.DataPoint{p}
			}
			return out
		}
		if len(points) == 0 {
			return nil
		}
		return [][]*measurev1.DataPoint{points}
	}
	index := map[string]int{}
	var out [][]*measurev1.DataPoint
	var key strings.Builder
	for _, p := range points {
		key.Reset()
		for _, ft := range sh.groupBy {
			v := pointTag(p, ft[0], ft[1])
			switch x := v.GetValue().(type) {
			case *modelv1.TagValue_Str:
				fmt.Fprintf(&key, "s%d:%s", len(x.Str.GetValue()), x.Str.GetValue())
			case *modelv1.TagValue_Int:
				fmt.Fprintf(&key, "i%d;", x.Int.GetValue())
			default:
				key.WriteString("n;") // null: points without the tag group together
			}
		}
		k := key.String()
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], p)
	}
	return out
}

// aggregate computes the aggregate of the group's field, as BanyanDB
// does: in the field's type; MEAN of ints divides as integers; COUNT
// counts the points.
func (sh *shaping) aggregate(g []*measurev1.DataPoint) (*modelv1.FieldValue, error) {
	var sum, lo, hi float64
	var isum, ilo, ihi int64
	n := 0
	for _, p := range g {
		fv := pointField(p, sh.aggField)
		var f float64
		var i int64
		switch x := fv.GetValue().(type) {
		case *modelv1.FieldValue_Int:
			i, f = x.Int.GetValue(), float64(x.Int.GetValue())
		case *modelv1.FieldValue_Float:
			f, i = x.Float.GetValue(), int64(x.Float.GetValue())
		default:
			continue // a point written without the field does not count
		}
		if n == 0 {
			lo, hi, ilo, ihi = f, f, i, i
		}
		sum, isum = sum+f, isum+i
		lo, hi, ilo, ihi = min(lo, f), max(hi, f), min(ilo, i), max(ihi, i)
		n++
	}
	var fres float64
	var ires int64
	switch sh.agg {
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM:
		fres, ires = sum, isum
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_COUNT:
		fres, ires = float64(n), int64(n)
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX:
		fres, ires = hi, ihi
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_MIN:
		fres, ires = lo, ilo
	case modelv1.AggregationFunction_AGGREGATION_FUNCTION_MEAN:
		if n > 0 {
			fres, ires = sum/float64(n), isum/int64(n)
			// BanyanDB's mean of a non-empty group is never below 1
			// (its aggregation's floor); its clients rely on it.
			fres, ires = max(fres, 1), max(ires, 1)
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "agg: function %v", sh.agg)
	}
	if sh.aggFloat {
		return &modelv1.FieldValue{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: fres}}}, nil
	}
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: ires}}}, nil
}

// topN keeps the n points with the highest (SORT_DESC, the default) or
// lowest (SORT_ASC) value of the field, ordered so; ties keep their order.
func topN(points []*measurev1.DataPoint, t *measurev1.QueryRequest_Top) []*measurev1.DataPoint {
	asc := t.GetFieldValueSort() == modelv1.Sort_SORT_ASC
	slices.SortStableFunc(points, func(a, b *measurev1.DataPoint) int {
		c := cmp.Compare(numeric(pointField(a, t.GetFieldName())), numeric(pointField(b, t.GetFieldName())))
		if asc {
			return c
		}
		return -c
	})
	return points[:min(len(points), int(t.GetNumber()))]
}

func numeric(v *modelv1.FieldValue) float64 {
	switch x := v.GetValue().(type) {
	case *modelv1.FieldValue_Int:
		return float64(x.Int.GetValue())
	case *modelv1.FieldValue_Float:
		return x.Float.GetValue()
	}
	return 0
}

func pointTag(p *measurev1.DataPoint, family, tag string) *modelv1.TagValue {
	for _, f := range p.GetTagFamilies() {
		if f.GetName() != family {
			continue
		}
		for _, t := range f.GetTags() {
			if t.GetKey() == tag {
				return t.GetValue()
			}
		}
	}
	return nil
}

func pointField(p *measurev1.DataPoint, name string) *modelv1.FieldValue {
	for _, f := range p.GetFields() {
		if f.GetName() == name {
			return f.GetValue()
		}
	}
	return nil
}

// project cuts a point's tags and fields down to req's projections (the
// data nodes were asked for more to group and aggregate by).
func project(req *measurev1.QueryRequest, p *measurev1.DataPoint) *measurev1.DataPoint {
	out := &measurev1.DataPoint{Timestamp: p.GetTimestamp(), Sid: p.GetSid(), Version: p.GetVersion()}
	for _, pf := range req.GetTagProjection().GetTagFamilies() {
		fam := &modelv1.TagFamily{Name: pf.GetName()}
		for _, tag := range pf.GetTags() {
			fam.Tags = append(fam.Tags, &modelv1.Tag{Key: tag, Value: pointTag(p, pf.GetName(), tag)})
		}
		out.TagFamilies = append(out.TagFamilies, fam)
	}
	for _, name := range req.GetFieldProjection().GetNames() {
		out.Fields = append(out.Fields, &measurev1.DataPoint_Field{Name: name, Value: pointField(p, name)})
	}
	return out
}

// familyOf returns the family of def holding tag.
func familyOf(def *databasev1.Measure, tag string) (string, bool) {
	for _, f := range def.GetTagFamilies() {
		for _, t := range f.GetTags() {
			if t.GetName() == tag {
				return f.GetName(), true
			}
		}
	}
	return "", false
}

// nullTag is the value of a tag a point was written without.
func nullTag() *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}}
}
