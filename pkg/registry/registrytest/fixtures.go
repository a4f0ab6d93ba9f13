// Package registrytest is the conformance suite every registry.SchemaStore
// must pass, plus fixtures and a recording watch handler for tests.
package registrytest

import (
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
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
