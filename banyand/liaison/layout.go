package liaison

import (
	"fmt"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

// tagRef is the position and type of one schema tag.
type tagRef struct {
	family, tag int
	name        string
	typ         databasev1.TagType
}

// familyLayout is one tag family of a schema, in schema order.
type familyLayout struct {
	name  string
	tags  []databasev1.TagType
	kinds []wire.Kind    // tagKinds of tags
	index map[string]int // tag name → position, for spec-ordered writes
	start int            // position of the family's first tag among all tags
}

// fieldLayout is one field of a measure schema.
type fieldLayout struct {
	name string
	typ  databasev1.FieldType
	kind wire.Kind // fieldKinds[typ]
}

// layout is the precomputed shape of a stream's or measure's values,
// built once per schema revision so a write resolves positions without
// lookups by name (except for spec-ordered writes). Every data model's
// write path checks its writes against one.
type layout struct {
	group       string
	name        string
	shardNum    uint32
	modRevision int64
	families    []familyLayout
	familyIndex map[string]int
	numTags     int // tags over all families
	entity      []tagRef
	// fields are a measure's fields; a stream has none.
	fields     []fieldLayout
	fieldIndex map[string]int
	// span locates a trace's span id and timestamp tags; nil for streams
	// and measures.
	span *spanTags
	// indexSpec is the encoded pkg/tagindex.Spec of the index rules bound
	// to the subject, sent with each write; nil indexes nothing.
	indexSpec []byte
	// byName locates each tag by name.
	byName map[string]tagRef
}

func newLayout(md *commonv1.Metadata, g *commonv1.Group, families []*databasev1.TagFamilySpec, entity *databasev1.Entity) (*layout, error) {
	l := &layout{
		group:       md.GetGroup(),
		name:        md.GetName(),
		shardNum:    g.GetResourceOpts().GetShardNum(),
		modRevision: md.GetModRevision(),
		familyIndex: make(map[string]int, len(families)),
	}
	if l.shardNum == 0 {
		return nil, fmt.Errorf("group %q has no shards", l.group)
	}
	byName := map[string]tagRef{}
	for fi, f := range families {
		fl := familyLayout{name: f.GetName(), index: make(map[string]int, len(f.GetTags())), start: l.numTags}
		for ti, t := range f.GetTags() {
			fl.tags = append(fl.tags, t.GetType())
			fl.kinds = append(fl.kinds, tagKinds[t.GetType()])
			fl.index[t.GetName()] = ti
			byName[t.GetName()] = tagRef{family: fi, tag: ti, name: t.GetName(), typ: t.GetType()}
		}
		l.numTags += len(fl.tags)
		l.families = append(l.families, fl)
		l.familyIndex[f.GetName()] = fi
	}
	l.byName = byName
	for _, name := range entity.GetTagNames() {
		ref, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("entity tag %q is not in any tag family", name)
		}
		l.entity = append(l.entity, ref)
	}
	if len(l.entity) == 0 {
		return nil, fmt.Errorf("%s/%s has no entity tags", l.group, l.name)
	}
	return l, nil
}

// streamLayout is a stream's layout and schema (queries send the schema).
type streamLayout struct {
	*layout
	schema *databasev1.Stream
}

func newStreamLayout(g *commonv1.Group, s *databasev1.Stream) (*streamLayout, error) {
	l, err := newLayout(s.GetMetadata(), g, s.GetTagFamilies(), s.GetEntity())
	if err != nil {
		return nil, err
	}
	return &streamLayout{layout: l, schema: s}, nil
}

// measureLayout is a measure's layout and schema.
type measureLayout struct {
	*layout
	schema *databasev1.Measure
}

func newMeasureLayout(g *commonv1.Group, m *databasev1.Measure) (*measureLayout, error) {
	l, err := newLayout(m.GetMetadata(), g, m.GetTagFamilies(), m.GetEntity())
	if err != nil {
		return nil, err
	}
	l.fieldIndex = make(map[string]int, len(m.GetFields()))
	for i, f := range m.GetFields() {
		l.fields = append(l.fields, fieldLayout{name: f.GetName(), typ: f.GetFieldType(), kind: fieldKinds[f.GetFieldType()]})
		l.fieldIndex[f.GetName()] = i
	}
	return &measureLayout{layout: l, schema: m}, nil
}
