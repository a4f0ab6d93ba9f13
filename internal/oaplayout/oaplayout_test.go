package oaplayout

import (
	"slices"
	"testing"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// Which columns get an index rule, of which type, and where each lands.
func TestRulesAndFamilies(t *testing.T) {
	str := databasev1.TagType_TAG_TYPE_STRING
	m := &Model{
		Group: "g", Name: "n", Catalog: commonv1.Catalog_CATALOG_STREAM, TimestampColumn: "ts",
		Columns: []Column{
			{Name: "id", Tag: str, SeriesID: true, Indexed: true},
			{Name: "plain", Tag: str, Indexed: true},
			{Name: "ts", Tag: databasev1.TagType_TAG_TYPE_INT, Indexed: true},
			{Name: "raw", Tag: databasev1.TagType_TAG_TYPE_DATA_BINARY},
			{Name: "text", Tag: str, SeriesID: true, Indexed: true, Analyzer: "simple"},
			{Name: "trace", Tag: str, Indexed: true, IndexType: databasev1.IndexRule_TYPE_SKIPPING},
			{Name: "latency", Tag: databasev1.TagType_TAG_TYPE_INT, Indexed: true, Sortable: true},
			{Name: "value", Field: databasev1.FieldType_FIELD_TYPE_INT},
		},
	}
	for _, tc := range []struct {
		col    string
		typ    databasev1.IndexRule_Type // unset: no rule
		noSort bool
	}{
		{"id", 0, false}, // a series id without analyzer
		{"plain", databasev1.IndexRule_TYPE_INVERTED, true},
		{"ts", 0, false},  // the timestamp column
		{"raw", 0, false}, // not indexed
		{"text", databasev1.IndexRule_TYPE_INVERTED, true}, // a series id with an analyzer
		{"trace", databasev1.IndexRule_TYPE_SKIPPING, true},
		{"latency", databasev1.IndexRule_TYPE_INVERTED, false},
		{"value", 0, false}, // a field
	} {
		i := slices.IndexFunc(m.Columns, func(c Column) bool { return c.Name == tc.col })
		r := m.IndexRule(m.Columns[i])
		switch {
		case tc.typ == 0 && r != nil:
			t.Errorf("%s: rule %v, want none", tc.col, r)
		case tc.typ != 0 && (r == nil || r.GetType() != tc.typ || r.GetNoSort() != tc.noSort || r.GetMetadata().GetGroup() != "g" ||
			!slices.Equal(r.GetTags(), []string{tc.col})):
			t.Errorf("%s: rule %v, want %s no_sort %v", tc.col, r, tc.typ, tc.noSort)
		}
	}
	fams := m.TagFamilies()
	var got [][]string
	for _, f := range fams {
		names := []string{f.GetName()}
		for _, tag := range f.GetTags() {
			names = append(names, tag.GetName())
		}
		got = append(got, names)
	}
	want := [][]string{{StorageOnly, "id", "ts", "raw"}, {Searchable, "plain", "text", "trace", "latency"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("tag families %v, want %v", got, want)
	}
	if e := m.Entity().GetTagNames(); !slices.Equal(e, []string{"id", "text"}) {
		t.Errorf("entity %v", e)
	}
	b := m.Binding(m.IndexRules())
	if !slices.Equal(b.GetRules(), []string{"plain", "text", "trace", "latency"}) || b.GetSubject().GetName() != "n" {
		t.Errorf("binding %v", b)
	}
	ms := m.Measure()
	if len(ms.GetFields()) != 1 || ms.GetFields()[0].GetEncodingMethod() != databasev1.EncodingMethod_ENCODING_METHOD_GORILLA {
		t.Errorf("measure fields %v", ms.GetFields())
	}
}
