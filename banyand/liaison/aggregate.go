package liaison

import (
	"cmp"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/aggregate"
	"github.com/banyand-io/banyand/banyand/schema"
)

// A measure query's group_by, agg and top answer in BanyanDB's order:
// group the points of the time range by the group-by tags (groups in the
// order their first point comes in the query's time order), aggregate a
// field over each group (or over all points without group_by), keep the
// top N by a field, then apply offset and limit. An aggregated point
// carries the tags of its group's first point and one field, the
// aggregate, named after the aggregated field; no timestamp. A group
// without agg is its first point.
//
// The data nodes fold the points of the shards each answers for into
// partial aggregates when every point has exactly one answerer
// (ShardAnswerers, pushdown.go); otherwise they ship the points, and the
// liaison removes the copies (a point may be on several nodes) and folds
// them itself. Either way the liaison merges the parts and finishes.

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

// part is one group's partial aggregate: its key (the group-by tag
// values), its first point and where that comes in the query's order, and
// the statistics of the aggregated field. A data node answers parts of
// the shards it answers for; the liaison folds shipped points into parts
// alike (fold), so one merge and one finish serve both.
type part struct {
	key   string
	pos   aggregate.Position
	first *measurev1.DataPoint
	stats aggregate.Stats
	// entity names the series a TopN ranks (its first point's tags).
	entity []*modelv1.Tag
}

// ranksPoints says each point is its own group: top without agg or
// group_by ranks points.
func (sh *shaping) ranksPoints() bool { return len(sh.groupBy) == 0 && sh.aggField == "" }

// fold groups points of the measure group group, in the query's order,
// into parts: groups in the order of their first point; without
// group_by, all points are one group for agg, and each point its own
// otherwise (top alone ranks points).
func (sh *shaping) fold(group string, points []*measurev1.DataPoint) []part {
	var out []part
	index := map[string]int{}
	var key []byte
	for _, p := range points {
		key = key[:0]
		for _, ft := range sh.groupBy {
			key = aggregate.AppendKey(key, pointTag(p, ft[0], ft[1]))
		}
		i, ok := index[string(key)]
		if !ok || sh.ranksPoints() {
			i = len(out)
			index[string(key)] = i
			out = append(out, part{key: string(key), first: p,
				pos: aggregate.Position{Ts: p.GetTimestamp().AsTime().UnixNano(), Group: group, Sid: p.GetSid()}})
		}
		if sh.aggField != "" {
			out[i].stats.Add(pointField(p, sh.aggField))
		}
	}
	return out
}

// merge combines the parts of one group from several nodes and groups
// (each group's first point the earliest in the query's order, desc its
// time order) and orders the groups by their first point.
func (sh *shaping) merge(parts []part, desc bool) []part {
	var out []part
	if sh.ranksPoints() {
		out = parts
	} else {
		index := map[string]int{}
		for _, p := range parts {
			i, ok := index[p.key]
			if !ok {
				index[p.key] = len(out)
				out = append(out, p)
				continue
			}
			m := &out[i]
			if aggregate.Compare(p.pos, m.pos, desc) < 0 {
				m.pos, m.first, m.entity = p.pos, p.first, p.entity
			}
			m.stats.Merge(p.stats)
		}
	}
	slices.SortFunc(out, func(a, b part) int { return aggregate.Compare(a.pos, b.pos, desc) })
	return out
}

// finish makes the answer of groups in order: a group without agg is its
// first point, with agg a point with the tags of its first point and the
// aggregate; then top N, offset and limit. req is the client's request,
// whose projections the answer keeps.
func (sh *shaping) finish(req *measurev1.QueryRequest, groups []part) ([]*measurev1.DataPoint, error) {
	out := make([]*measurev1.DataPoint, 0, len(groups))
	for _, g := range groups {
		if sh.aggField == "" {
			out = append(out, project(req, g.first))
			continue
		}
		v, err := g.stats.Result(sh.agg, sh.aggFloat)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "agg: %v", err)
		}
		out = append(out, &measurev1.DataPoint{
			TagFamilies: project(req, g.first).GetTagFamilies(),
			Fields:      []*measurev1.DataPoint_Field{{Name: sh.aggField, Value: v}},
		})
	}
	if sh.top != nil {
		out = topN(out, sh.top)
	}
	return page(out, req.GetOffset(), req.GetLimit(), schema.DefaultMeasureLimit), nil
}

// topN keeps the n points with the highest (SORT_DESC, the default) or
// lowest (SORT_ASC) value of the field, ordered so; ties keep their order.
func topN(points []*measurev1.DataPoint, t *measurev1.QueryRequest_Top) []*measurev1.DataPoint {
	asc := t.GetFieldValueSort() == modelv1.Sort_SORT_ASC
	slices.SortStableFunc(points, func(a, b *measurev1.DataPoint) int {
		c := cmp.Compare(aggregate.Numeric(pointField(a, t.GetFieldName())), aggregate.Numeric(pointField(b, t.GetFieldName())))
		if asc {
			return c
		}
		return -c
	})
	return points[:min(len(points), int(t.GetNumber()))]
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
