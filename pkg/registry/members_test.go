package registry

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

func TestValidateMembers(t *testing.T) {
	md := func() *commonv1.Metadata { return &commonv1.Metadata{Group: "g", Name: "n"} }
	rule := func() *databasev1.IndexRule {
		return &databasev1.IndexRule{Metadata: md(), Tags: []string{"service"}, Type: databasev1.IndexRule_TYPE_INVERTED}
	}
	begin := timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	binding := func() *databasev1.IndexRuleBinding {
		return &databasev1.IndexRuleBinding{Metadata: md(), Rules: []string{"service"},
			Subject: &databasev1.Subject{Catalog: commonv1.Catalog_CATALOG_MEASURE, Name: "cpu"},
			BeginAt: begin, ExpireAt: timestamppb.New(begin.AsTime().Add(time.Hour))}
	}
	topn := func() *databasev1.TopNAggregation {
		return &databasev1.TopNAggregation{Metadata: md(), SourceMeasure: md(), FieldName: "value", CountersNumber: 1000}
	}
	trace := func() *databasev1.Trace {
		return &databasev1.Trace{Metadata: md(), TraceIdTagName: "trace_id", SpanIdTagName: "span_id", TimestampTagName: "ts",
			Tags: []*databasev1.TraceTagSpec{
				{Name: "trace_id", Type: databasev1.TagType_TAG_TYPE_STRING},
				{Name: "span_id", Type: databasev1.TagType_TAG_TYPE_STRING},
				{Name: "ts", Type: databasev1.TagType_TAG_TYPE_TIMESTAMP},
			}}
	}
	property := func() *databasev1.Property {
		return &databasev1.Property{Metadata: md(), Tags: []*databasev1.TagSpec{{Name: "v", Type: databasev1.TagType_TAG_TYPE_STRING}}}
	}
	tests := []struct {
		name  string
		msg   proto.Message
		field string // "" = valid
	}{
		{"rule", rule(), ""},
		{"rule no tags", func() proto.Message { r := rule(); r.Tags = nil; return r }(), "index_rule.tags"},
		{"rule duplicate tag", func() proto.Message { r := rule(); r.Tags = []string{"a", "a"}; return r }(), "index_rule.tags[1]"},
		{"rule no type", func() proto.Message { r := rule(); r.Type = 0; return r }(), "index_rule.type"},
		{"rule unknown type", func() proto.Message { r := rule(); r.Type = 9; return r }(), "index_rule.type"},
		{"rule unknown analyzer", func() proto.Message { r := rule(); r.Analyzer = "klingon"; return r }(), "index_rule.analyzer"},
		{"rule url analyzer", func() proto.Message { r := rule(); r.Analyzer = "url"; return r }(), ""},
		{"rule no group", func() proto.Message { r := rule(); r.Metadata.Group = ""; return r }(), "index_rule.metadata.group"},
		{"binding", binding(), ""},
		{"binding no rules", func() proto.Message { b := binding(); b.Rules = nil; return b }(), "index_rule_binding.rules"},
		{"binding too many rules", func() proto.Message {
			b := binding()
			b.Rules = nil
			for i := range MaxBindingRules + 1 {
				b.Rules = append(b.Rules, string(rune('a'+i%26))+string(rune('a'+i/26)))
			}
			return b
		}(), "index_rule_binding.rules"},
		{"binding no subject", func() proto.Message { b := binding(); b.Subject = nil; return b }(), "index_rule_binding.subject"},
		{"binding property subject", func() proto.Message { b := binding(); b.Subject.Catalog = commonv1.Catalog_CATALOG_PROPERTY; return b }(), "index_rule_binding.subject.catalog"},
		{"binding no begin", func() proto.Message { b := binding(); b.BeginAt = nil; return b }(), "index_rule_binding.begin_at"},
		{"binding expires before begin", func() proto.Message { b := binding(); b.ExpireAt = begin; return b }(), "index_rule_binding.expire_at"},
		{"topn", topn(), ""},
		{"topn no source", func() proto.Message { a := topn(); a.SourceMeasure = nil; return a }(), "top_n_aggregation.source_measure"},
		{"topn no field", func() proto.Message { a := topn(); a.FieldName = ""; return a }(), "top_n_aggregation.field_name"},
		{"topn no counters", func() proto.Message { a := topn(); a.CountersNumber = 0; return a }(), "top_n_aggregation.counters_number"},
		{"topn unknown sort", func() proto.Message { a := topn(); a.FieldValueSort = 7; return a }(), "top_n_aggregation.field_value_sort"},
		{"trace", trace(), ""},
		{"trace no tags", func() proto.Message { tr := trace(); tr.Tags = nil; return tr }(), "trace.tags"},
		{"trace no span id", func() proto.Message { tr := trace(); tr.SpanIdTagName = ""; return tr }(), "trace.span_id_tag_name"},
		{"trace timestamp not a timestamp", func() proto.Message {
			tr := trace()
			tr.Tags[2].Type = databasev1.TagType_TAG_TYPE_INT
			return tr
		}(), "trace.timestamp_tag_name"},
		{"trace duplicate tag", func() proto.Message { tr := trace(); tr.Tags[1].Name = "trace_id"; return tr }(), "trace.tags[1].name"},
		{"property", property(), ""},
		{"property no tags", func() proto.Message { p := property(); p.Tags = nil; return p }(), "property.tags"},
		{"property tag without type", func() proto.Message { p := property(); p.Tags[0].Type = 0; return p }(), "property.tags[0].type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.msg)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var ia *InvalidArgumentError
			if !errors.As(err, &ia) || ia.Field != tc.field {
				t.Fatalf("Validate = %v, want InvalidArgumentError on %s", err, tc.field)
			}
		})
	}
}

func TestPrepareGivesIndexRulesBanyanDBsID(t *testing.T) {
	r := &databasev1.IndexRule{Metadata: &commonv1.Metadata{Group: "sw_metricsMinute", Name: "service_id"}}
	Prepare(r)
	if r.GetMetadata().GetId() == 0 {
		t.Fatal("no id assigned")
	}
	r2 := &databasev1.IndexRule{Metadata: &commonv1.Metadata{Group: "g", Name: "n", Id: 7}}
	Prepare(r2)
	if r2.GetMetadata().GetId() != 7 {
		t.Fatalf("a client's id was replaced: %d", r2.GetMetadata().GetId())
	}
}
