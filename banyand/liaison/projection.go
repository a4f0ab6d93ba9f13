package liaison

import (
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// A query over several groups may project a tag or field that some of the
// groups' schemas lack (a tag added in a newer group): as BanyanDB, those
// groups answer null for it. Each group's data nodes are asked for what
// its schema has (fit), and the liaison puts the nulls back (fill). One
// group alone asked for what it lacks is refused by its data nodes.

func hasTag(fams []*databasev1.TagFamilySpec, family, tag string) bool {
	for _, f := range fams {
		if f.GetName() == family {
			return slices.ContainsFunc(f.GetTags(), func(t *databasev1.TagSpec) bool { return t.GetName() == tag })
		}
	}
	return false
}

// checkProjected refuses a projected tag that no group's schema (fams, one
// list a group) has.
func checkProjected(p *modelv1.TagProjection, fams [][]*databasev1.TagFamilySpec) error {
	for _, pf := range p.GetTagFamilies() {
		for _, tag := range pf.GetTags() {
			if !slices.ContainsFunc(fams, func(f []*databasev1.TagFamilySpec) bool { return hasTag(f, pf.GetName(), tag) }) {
				return status.Errorf(codes.InvalidArgument, "projection: no group asked has tag %q in family %q", tag, pf.GetName())
			}
		}
	}
	return nil
}

// fitTags returns p without the tags fams lack, and whether it left any out.
func fitTags(p *modelv1.TagProjection, fams []*databasev1.TagFamilySpec) (*modelv1.TagProjection, bool) {
	out, cut := &modelv1.TagProjection{}, false
	for _, pf := range p.GetTagFamilies() {
		var tags []string
		for _, tag := range pf.GetTags() {
			if hasTag(fams, pf.GetName(), tag) {
				tags = append(tags, tag)
			} else {
				cut = true
			}
		}
		if len(tags) > 0 {
			out.TagFamilies = append(out.TagFamilies, &modelv1.TagProjection_TagFamily{Name: pf.GetName(), Tags: tags})
		}
	}
	if !cut {
		return p, false
	}
	return out, true
}

// fillTags lays got out as p asks, null for a tag got lacks.
func fillTags(p *modelv1.TagProjection, got []*modelv1.TagFamily) []*modelv1.TagFamily {
	out := make([]*modelv1.TagFamily, len(p.GetTagFamilies()))
	for i, pf := range p.GetTagFamilies() {
		fam := &modelv1.TagFamily{Name: pf.GetName(), Tags: make([]*modelv1.Tag, len(pf.GetTags()))}
		for j, tag := range pf.GetTags() {
			fam.Tags[j] = &modelv1.Tag{Key: tag, Value: nullTag()}
			for _, gf := range got {
				if gf.GetName() != pf.GetName() {
					continue
				}
				for _, gt := range gf.GetTags() {
					if gt.GetKey() == tag {
						fam.Tags[j] = gt
					}
				}
			}
		}
		out[i] = fam
	}
	return out
}

// fitStream fits one group's request (of several groups) to its schema
// and returns what fills its elements back, or nil when nothing is left out.
func fitStream(one *streamv1.QueryRequest, def *databasev1.Stream) func(*streamv1.Element) {
	asked := one.GetProjection()
	fitted, cut := fitTags(asked, def.GetTagFamilies())
	if !cut {
		return nil
	}
	one.Projection = fitted
	return func(el *streamv1.Element) { el.TagFamilies = fillTags(asked, el.GetTagFamilies()) }
}

// fitMeasure is fitStream for measures: tags and fields.
func fitMeasure(one *measurev1.QueryRequest, def *databasev1.Measure) func(*measurev1.DataPoint) {
	asked, askedFields := one.GetTagProjection(), one.GetFieldProjection().GetNames()
	fitted, cut := fitTags(asked, def.GetTagFamilies())
	var fields []string
	for _, name := range askedFields {
		if slices.ContainsFunc(def.GetFields(), func(f *databasev1.FieldSpec) bool { return f.GetName() == name }) {
			fields = append(fields, name)
		}
	}
	if !cut && len(fields) == len(askedFields) {
		return nil
	}
	one.TagProjection = fitted
	if one.FieldProjection != nil {
		one.FieldProjection = &measurev1.QueryRequest_FieldProjection{Names: fields}
	}
	return func(dp *measurev1.DataPoint) {
		dp.TagFamilies = fillTags(asked, dp.GetTagFamilies())
		if len(askedFields) == 0 {
			return
		}
		out := make([]*measurev1.DataPoint_Field, len(askedFields))
		for i, name := range askedFields {
			out[i] = &measurev1.DataPoint_Field{Name: name, Value: nullField()}
			if v := pointField(dp, name); v != nil {
				out[i].Value = v
			}
		}
		dp.Fields = out
	}
}

// nullField is the value of a field a point was written without.
func nullField() *modelv1.FieldValue {
	return &modelv1.FieldValue{Value: &modelv1.FieldValue_Null{Null: structpb.NullValue_NULL_VALUE}}
}

// checkMeasureProjected is checkProjected for a measure query over the
// groups' schemas defs, fields included.
func checkMeasureProjected(req *measurev1.QueryRequest, defs []*databasev1.Measure) error {
	fams := make([][]*databasev1.TagFamilySpec, len(defs))
	for i, d := range defs {
		fams[i] = d.GetTagFamilies()
	}
	if err := checkProjected(req.GetTagProjection(), fams); err != nil {
		return err
	}
	for _, name := range req.GetFieldProjection().GetNames() {
		if !slices.ContainsFunc(defs, func(d *databasev1.Measure) bool {
			return slices.ContainsFunc(d.GetFields(), func(f *databasev1.FieldSpec) bool { return f.GetName() == name })
		}) {
			return status.Errorf(codes.InvalidArgument, "field_projection: no group asked has field %q", name)
		}
	}
	return nil
}
