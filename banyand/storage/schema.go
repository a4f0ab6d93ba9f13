package storage

import (
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// tagRef locates a tag in stored values: written tag values are positional,
// family by family, in the schema's order.
type tagRef struct {
	family, tag int
	name        string
}

// tagLayout resolves tag names of one stream or measure schema.
type tagLayout struct {
	families []*databasev1.TagFamilySpec
	byName   map[string]tagRef
}

func newTagLayout(families []*databasev1.TagFamilySpec) *tagLayout {
	l := &tagLayout{families: families, byName: make(map[string]tagRef)}
	for fi, f := range families {
		for ti, t := range f.GetTags() {
			// Tag names are unique across families in a BanyanDB schema; a
			// condition names a tag without its family.
			if _, dup := l.byName[t.GetName()]; !dup {
				l.byName[t.GetName()] = tagRef{family: fi, tag: ti, name: t.GetName()}
			}
		}
	}
	return l
}

func (l *tagLayout) tag(name string) (tagRef, error) {
	r, ok := l.byName[name]
	if !ok {
		return tagRef{}, fmt.Errorf("%w: unknown tag %q", errInvalidQuery, name)
	}
	return r, nil
}

// sortable returns tag when it is an int tag, whose sorted index (if the
// segments keep one) gives an order by it; else "".
func (l *tagLayout) sortable(tag string) string {
	r, ok := l.byName[tag]
	if !ok || l.families[r.family].GetTags()[r.tag].GetType() != databasev1.TagType_TAG_TYPE_INT {
		return ""
	}
	return tag
}

// projection is the resolved tag projection: output families in request order.
type projection struct {
	families []projectedFamily
}

type projectedFamily struct {
	name string
	tags []tagRef
}

func (l *tagLayout) projection(p *modelv1.TagProjection) (projection, error) {
	var out projection
	for _, pf := range p.GetTagFamilies() {
		fi := -1
		for i, f := range l.families {
			if f.GetName() == pf.GetName() {
				fi = i
				break
			}
		}
		if fi < 0 {
			return projection{}, fmt.Errorf("%w: unknown tag family %q in projection", errInvalidQuery, pf.GetName())
		}
		fam := projectedFamily{name: pf.GetName()}
		for _, name := range pf.GetTags() {
			ti := -1
			for i, t := range l.families[fi].GetTags() {
				if t.GetName() == name {
					ti = i
					break
				}
			}
			if ti < 0 {
				return projection{}, fmt.Errorf("%w: unknown tag %q in family %q of projection", errInvalidQuery, name, pf.GetName())
			}
			fam.tags = append(fam.tags, tagRef{family: fi, tag: ti, name: name})
		}
		out.families = append(out.families, fam)
	}
	return out, nil
}

func nullTag() *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}}
}

// lookup returns the stored value of r, or nil (null) when the write had
// none, e.g. because the tag was added to the schema after the write.
func lookup(tfs []*modelv1.TagFamilyForWrite, r tagRef) *modelv1.TagValue {
	if r.family >= len(tfs) {
		return nil
	}
	tags := tfs[r.family].GetTags()
	if r.tag >= len(tags) || tags[r.tag] == nil || tags[r.tag].GetValue() == nil {
		return nil
	}
	return tags[r.tag]
}

// project builds the response tag families of one stored value.
func (p projection) project(tfs []*modelv1.TagFamilyForWrite) []*modelv1.TagFamily {
	if len(p.families) == 0 {
		return nil
	}
	out := make([]*modelv1.TagFamily, len(p.families))
	for i, f := range p.families {
		tags := make([]*modelv1.Tag, len(f.tags))
		for j, r := range f.tags {
			tags[j] = &modelv1.Tag{Key: r.name, Value: answered(lookup(tfs, r))}
		}
		out[i] = &modelv1.TagFamily{Name: f.name, Tags: tags}
	}
	return out
}

// answered is a stored tag value as a query answers it: null when the
// write had none, and, as BanyanDB reads them back, for an empty string
// or empty binary data (BanyanDB stores no bytes for them).
func answered(v *modelv1.TagValue) *modelv1.TagValue {
	switch x := v.GetValue().(type) {
	case nil:
		return nullTag()
	case *modelv1.TagValue_Str:
		if x.Str.GetValue() == "" {
			return nullTag()
		}
	case *modelv1.TagValue_BinaryData:
		if len(x.BinaryData) == 0 {
			return nullTag()
		}
	}
	return v
}
