package schema

import (
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
)

func strTag(k, v string) *modelv1.Tag {
	return &modelv1.Tag{Key: k, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: v}}}}
}

func prop(rev, created int64, tags ...*modelv1.Tag) *propertyv1.Property {
	return &propertyv1.Property{
		Metadata: &commonv1.Metadata{Group: "g", Name: "p", ModRevision: rev, CreateRevision: created},
		Id:       "1", Tags: tags,
	}
}

func TestApplyPropertyRevisionRule(t *testing.T) {
	merge, replace := propertyv1.ApplyRequest_STRATEGY_UNSPECIFIED, propertyv1.ApplyRequest_STRATEGY_REPLACE
	live := &clusterv1.StoredProperty{Property: prop(10, 5, strTag("a", "1"), strTag("b", "1"))}
	tomb := &clusterv1.StoredProperty{Property: prop(20, 5), Deleted: true}
	tests := []struct {
		name    string
		cur     *clusterv1.StoredProperty
		w       *clusterv1.PropertyWrite
		changed bool
		want    *clusterv1.StoredProperty
	}{
		{"create", nil, &clusterv1.PropertyWrite{Property: prop(10, 0, strTag("a", "1"))}, true,
			&clusterv1.StoredProperty{Property: prop(10, 10, strTag("a", "1"))}},
		{"merge keeps unsent tags after the sent ones", live, &clusterv1.PropertyWrite{Strategy: merge, Property: prop(11, 0, strTag("b", "2"), strTag("c", "2"))}, true,
			&clusterv1.StoredProperty{Property: prop(11, 5, strTag("b", "2"), strTag("c", "2"), strTag("a", "1"))}},
		{"replace drops unsent tags", live, &clusterv1.PropertyWrite{Strategy: replace, Property: prop(11, 0, strTag("c", "2"))}, true,
			&clusterv1.StoredProperty{Property: prop(11, 5, strTag("c", "2"))}},
		{"an older revision changes nothing", live, &clusterv1.PropertyWrite{Property: prop(9, 0, strTag("a", "old"))}, false, live},
		{"a redelivery changes nothing", live, &clusterv1.PropertyWrite{Property: prop(10, 0, strTag("a", "again"))}, false, live},
		{"delete keeps a tombstone", live, &clusterv1.PropertyWrite{Delete: true, Property: prop(12, 0)}, true,
			&clusterv1.StoredProperty{Property: prop(12, 5), Deleted: true}},
		{"a write older than the tombstone stays deleted", tomb, &clusterv1.PropertyWrite{Property: prop(15, 0, strTag("a", "1"))}, false, tomb},
		{"a later write over a tombstone creates afresh, not merged", tomb, &clusterv1.PropertyWrite{Property: prop(25, 0, strTag("c", "1"))}, true,
			&clusterv1.StoredProperty{Property: prop(25, 25, strTag("c", "1"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := ApplyProperty(tt.cur, tt.w)
			if changed != tt.changed || !proto.Equal(got, tt.want) {
				t.Fatalf("ApplyProperty = %v, %v; want %v, %v", got, changed, tt.want, tt.changed)
			}
		})
	}
}
