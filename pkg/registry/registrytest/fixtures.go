// Package registrytest is the conformance suite every registry.SchemaStore
// must pass, plus fixtures and a recording watch handler for tests.
package registrytest

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// NewGroup returns a valid group of the given catalog with 2 shards.
func NewGroup(name string, catalog commonv1.Catalog) *commonv1.Group {
	return &commonv1.Group{
		Metadata:     &commonv1.Metadata{Name: name},
		Catalog:      catalog,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: 2},
	}
}

// NewStream returns a valid stream: one "default" family with tags
// service (entity) and trace_id.
func NewStream(group, name string) *databasev1.Stream {
	return &databasev1.Stream{
		Metadata: &commonv1.Metadata{Group: group, Name: name},
		TagFamilies: []*databasev1.TagFamilySpec{{
			Name: "default",
			Tags: []*databasev1.TagSpec{
				{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
				{Name: "trace_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			},
		}},
		Entity: &databasev1.Entity{TagNames: []string{"service"}},
	}
}

// NewMeasure returns a valid measure: entity tag service, field value.
func NewMeasure(group, name string) *databasev1.Measure {
	return &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: group, Name: name},
		TagFamilies: []*databasev1.TagFamilySpec{{
			Name: "default",
			Tags: []*databasev1.TagSpec{{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING}},
		}},
		Fields: []*databasev1.FieldSpec{{Name: "value", FieldType: databasev1.FieldType_FIELD_TYPE_INT}},
		Entity: &databasev1.Entity{TagNames: []string{"service"}},
	}
}

// NewIndexRule returns a valid inverted index rule on tags.
func NewIndexRule(group, name string, tags ...string) *databasev1.IndexRule {
	return &databasev1.IndexRule{
		Metadata: &commonv1.Metadata{Group: group, Name: name},
		Tags:     tags,
		Type:     databasev1.IndexRule_TYPE_INVERTED,
	}
}

// NewIndexRuleBinding returns a valid binding of rules to the subject of
// catalog c named subject, in force from 2020 to 2099.
func NewIndexRuleBinding(group, name string, c commonv1.Catalog, subject string, rules ...string) *databasev1.IndexRuleBinding {
	return &databasev1.IndexRuleBinding{
		Metadata: &commonv1.Metadata{Group: group, Name: name},
		Rules:    rules,
		Subject:  &databasev1.Subject{Catalog: c, Name: subject},
		BeginAt:  timestamppb.New(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)),
		ExpireAt: timestamppb.New(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
}

// NewTopNAggregation returns a valid TopN aggregation over the "value"
// field of measure source (see NewMeasure), grouped by service.
func NewTopNAggregation(group, name, source string) *databasev1.TopNAggregation {
	return &databasev1.TopNAggregation{
		Metadata:        &commonv1.Metadata{Group: group, Name: name},
		SourceMeasure:   &commonv1.Metadata{Group: group, Name: source},
		FieldName:       "value",
		FieldValueSort:  modelv1.Sort_SORT_DESC,
		GroupByTagNames: []string{"service"},
		CountersNumber:  1000,
		LruSize:         10,
	}
}

// NewTrace returns a valid trace schema: tags trace_id, span_id, service
// and timestamp.
func NewTrace(group, name string) *databasev1.Trace {
	return &databasev1.Trace{
		Metadata: &commonv1.Metadata{Group: group, Name: name},
		Tags: []*databasev1.TraceTagSpec{
			{Name: "trace_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "span_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "timestamp", Type: databasev1.TagType_TAG_TYPE_TIMESTAMP},
		},
		TraceIdTagName:   "trace_id",
		SpanIdTagName:    "span_id",
		TimestampTagName: "timestamp",
	}
}

// NewProperty returns a valid property schema with tags name and value.
func NewProperty(group, name string) *databasev1.Property {
	return &databasev1.Property{
		Metadata: &commonv1.Metadata{Group: group, Name: name},
		Tags: []*databasev1.TagSpec{
			{Name: "name", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "value", Type: databasev1.TagType_TAG_TYPE_DATA_BINARY},
		},
	}
}
