// Package oaplayout lays out SkyWalking OAP 10.4's storage models in
// BanyanDB as OAP's BanyanDB storage plugin does (MetadataRegistry,
// BanyanDBIndexInstaller): which columns become tags or fields, which
// family a tag goes to, the entity, and the index rules and their binding.
// The OAP client tests and the load tool's oap shape build their schemas
// from it.
package oaplayout

import (
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// Tag family names of measures and streams: a tag with an index rule goes
// to Searchable, every other one to StorageOnly.
const (
	Searchable  = "searchable"
	StorageOnly = "storage-only"
)

// Column is the part of an OAP ModelColumn a schema is built from.
type Column struct {
	Name  string
	Tag   databasev1.TagType   // a tag's type (measures: when Field is unset)
	Field databasev1.FieldType // set: a measure field (@BanyanDB.MeasureField)
	// SeriesID: @BanyanDB.SeriesID; the entity lists such columns in the
	// model's column order (which here is their index order).
	SeriesID bool
	// Indexed is shouldIndex: not storageOnly, no @BanyanDB.NoIndexing.
	Indexed bool
	// IndexType is @BanyanDB.IndexRule's type; unset: inverted.
	IndexType databasev1.IndexRule_Type
	Analyzer  string // @BanyanDB.MatchQuery
	Sortable  bool   // @BanyanDB.EnableSort
}

// Model is one OAP model: a measure (Interval set) or a stream. Columns
// are in the model's order: a class's own fields before its
// superclass's, as StorageModels reads them; time_bucket is never one.
type Model struct {
	Group, Name string
	Catalog     commonv1.Catalog
	Interval    string // measure: downSamplingDuration(...).format()
	// TimestampColumn is a stream's @BanyanDB.TimestampColumn, never
	// indexed.
	TimestampColumn string
	ShardingKey     []string // @BanyanDB.ShardingKey
	Columns         []Column
}

// Metadata is the model's group and name.
func (m *Model) Metadata() *commonv1.Metadata {
	return &commonv1.Metadata{Group: m.Group, Name: m.Name}
}

// IndexRule is the rule parseTagMetadata makes for c, or nil: an indexed
// tag that is not the timestamp column and not a series id (unless it has
// an analyzer) gets a rule named after the tag, in the model's group.
func (m *Model) IndexRule(c Column) *databasev1.IndexRule {
	if c.Field != databasev1.FieldType_FIELD_TYPE_UNSPECIFIED || !c.Indexed || c.Name == m.TimestampColumn || (c.SeriesID && c.Analyzer == "") {
		return nil
	}
	typ := c.IndexType
	if typ == databasev1.IndexRule_TYPE_UNSPECIFIED {
		typ = databasev1.IndexRule_TYPE_INVERTED
	}
	return &databasev1.IndexRule{
		Metadata: &commonv1.Metadata{Group: m.Group, Name: c.Name},
		Tags:     []string{c.Name},
		Type:     typ,
		NoSort:   !c.Sortable,
		Analyzer: c.Analyzer,
	}
}

// IndexRules are the model's rules in column order.
func (m *Model) IndexRules() []*databasev1.IndexRule {
	var rules []*databasev1.IndexRule
	for _, c := range m.Columns {
		if r := m.IndexRule(c); r != nil {
			rules = append(rules, r)
		}
	}
	return rules
}

// Family is the family of tag c.
func (m *Model) Family(c Column) string {
	if m.IndexRule(c) != nil {
		return Searchable
	}
	return StorageOnly
}

// Families maps each tag to its family, as MetadataRegistry.Schema.tags.
func (m *Model) Families() map[string]string {
	fams := map[string]string{}
	for _, c := range m.Columns {
		if c.Field == databasev1.FieldType_FIELD_TYPE_UNSPECIFIED {
			fams[c.Name] = m.Family(c)
		}
	}
	return fams
}

// TagFamilies groups the tags as extractTagFamilySpec does. The families
// come out of a Java HashMap keyed by family name, which iterates
// "storage-only" (bucket 5) before "searchable" (bucket 14); tags keep the
// model's column order. Both differ from the alphabetical order OAP
// writes in.
func (m *Model) TagFamilies() []*databasev1.TagFamilySpec {
	var out []*databasev1.TagFamilySpec
	for _, fam := range []string{StorageOnly, Searchable} {
		spec := &databasev1.TagFamilySpec{Name: fam}
		for _, c := range m.Columns {
			if c.Field == databasev1.FieldType_FIELD_TYPE_UNSPECIFIED && m.Family(c) == fam {
				spec.Tags = append(spec.Tags, &databasev1.TagSpec{Name: c.Name, Type: c.Tag})
			}
		}
		if len(spec.Tags) > 0 {
			out = append(out, spec)
		}
	}
	return out
}

// Entity lists the series id columns.
func (m *Model) Entity() *databasev1.Entity {
	e := &databasev1.Entity{}
	for _, c := range m.Columns {
		if c.SeriesID {
			e.TagNames = append(e.TagNames, c.Name)
		}
	}
	return e
}

// Measure is registerMeasureModel's Measure. Fields get parseFieldSpec's
// methods: ZSTD for all, GORILLA for ints.
func (m *Model) Measure() *databasev1.Measure {
	ms := &databasev1.Measure{
		Metadata:    m.Metadata(),
		Interval:    m.Interval,
		Entity:      m.Entity(),
		TagFamilies: m.TagFamilies(),
	}
	if len(m.ShardingKey) > 0 {
		ms.ShardingKey = &databasev1.ShardingKey{TagNames: m.ShardingKey}
	}
	for _, c := range m.Columns {
		if c.Field == databasev1.FieldType_FIELD_TYPE_UNSPECIFIED {
			continue
		}
		f := &databasev1.FieldSpec{Name: c.Name, FieldType: c.Field, CompressionMethod: databasev1.CompressionMethod_COMPRESSION_METHOD_ZSTD}
		if c.Field == databasev1.FieldType_FIELD_TYPE_INT {
			f.EncodingMethod = databasev1.EncodingMethod_ENCODING_METHOD_GORILLA
		}
		ms.Fields = append(ms.Fields, f)
	}
	return ms
}

// Stream is registerStreamModel's Stream.
func (m *Model) Stream() *databasev1.Stream {
	return &databasev1.Stream{Metadata: m.Metadata(), Entity: m.Entity(), TagFamilies: m.TagFamilies()}
}

// Binding is the IndexRuleBinding BanyanDBIndexInstaller builds for
// rules: named after its subject, in the subject's group. begin_at and
// expire_at are left to the caller (OAP's client: now and 2099-01-01).
func (m *Model) Binding(rules []*databasev1.IndexRule) *databasev1.IndexRuleBinding {
	b := &databasev1.IndexRuleBinding{
		Metadata: m.Metadata(),
		Subject:  &databasev1.Subject{Catalog: m.Catalog, Name: m.Name},
	}
	for _, r := range rules {
		b.Rules = append(b.Rules, r.GetMetadata().GetName())
	}
	return b
}
