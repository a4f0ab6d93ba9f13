package registry

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

func group() *commonv1.Group {
	return &commonv1.Group{
		Metadata:     &commonv1.Metadata{Name: "g"},
		Catalog:      commonv1.Catalog_CATALOG_STREAM,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: 1},
	}
}

func stream() *databasev1.Stream {
	return &databasev1.Stream{
		Metadata: &commonv1.Metadata{Group: "g", Name: "s"},
		TagFamilies: []*databasev1.TagFamilySpec{
			{Name: "searchable", Tags: []*databasev1.TagSpec{
				{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
				{Name: "instance", Type: databasev1.TagType_TAG_TYPE_STRING},
			}},
			{Name: "data", Tags: []*databasev1.TagSpec{{Name: "body", Type: databasev1.TagType_TAG_TYPE_DATA_BINARY}}},
		},
		Entity: &databasev1.Entity{TagNames: []string{"service", "instance"}},
	}
}

func measure() *databasev1.Measure {
	return &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: "g", Name: "m"},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{
			{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
		}}},
		Fields:   []*databasev1.FieldSpec{{Name: "total", FieldType: databasev1.FieldType_FIELD_TYPE_INT}},
		Entity:   &databasev1.Entity{TagNames: []string{"service"}},
		Interval: "1m",
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		msg   proto.Message
		field string // "" means valid
		err   error  // sentinel when not an InvalidArgumentError
	}{
		{"group ok", group(), "", nil},
		{"stream ok", stream(), "", nil},
		{"measure ok", measure(), "", nil},
		{"measure interval of a day", func() proto.Message { m := measure(); m.Interval = "1d"; return m }(), "", nil},
		{"measure interval of an hour", func() proto.Message { m := measure(); m.Interval = "1h"; return m }(), "", nil},
		{"nil", nil, "object", nil},
		{"wrong type", &commonv1.Metadata{}, "object", nil},

		{"group no metadata", func() proto.Message { g := group(); g.Metadata = nil; return g }(), "group.metadata", nil},
		{"group empty name", func() proto.Message { g := group(); g.Metadata.Name = ""; return g }(), "group.metadata.name", nil},
		{"group slash", func() proto.Message { g := group(); g.Metadata.Name = "a/b"; return g }(), "group.metadata.name", nil},
		{"group NUL", func() proto.Message { g := group(); g.Metadata.Name = "a\x00"; return g }(), "group.metadata.name", nil},
		{"group no catalog", func() proto.Message { g := group(); g.Catalog = 0; return g }(), "group.catalog", nil},
		{"group unknown catalog", func() proto.Message { g := group(); g.Catalog = 42; return g }(), "group.catalog", nil},
		{"group property catalog", func() proto.Message { g := group(); g.Catalog = commonv1.Catalog_CATALOG_PROPERTY; return g }(), "", nil},
		{"group trace catalog", func() proto.Message { g := group(); g.Catalog = commonv1.Catalog_CATALOG_TRACE; return g }(), "", nil},
		{"property group with segment interval", func() proto.Message {
			g := group()
			g.Catalog = commonv1.Catalog_CATALOG_PROPERTY
			g.ResourceOpts.SegmentInterval = &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}
			return g
		}(), "group.resource_opts.segment_interval", nil},
		{"group no resource opts", func() proto.Message { g := group(); g.ResourceOpts = nil; return g }(), "group.resource_opts", nil},
		{"group zero shards", func() proto.Message { g := group(); g.ResourceOpts.ShardNum = 0; return g }(), "group.resource_opts.shard_num", nil},
		{"group too many shards", func() proto.Message { g := group(); g.ResourceOpts.ShardNum = 1 << 20; return g }(), "group.resource_opts.shard_num", nil},
		{"group ttl without unit", func() proto.Message {
			g := group()
			g.ResourceOpts.Ttl = &commonv1.IntervalRule{Num: 7}
			return g
		}(), "group.resource_opts.ttl.unit", nil},
		{"group segment zero", func() proto.Message {
			g := group()
			g.ResourceOpts.SegmentInterval = &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY}
			return g
		}(), "group.resource_opts.segment_interval.num", nil},

		{"stream no metadata", func() proto.Message { s := stream(); s.Metadata = nil; return s }(), "stream.metadata", nil},
		{"stream no group", func() proto.Message { s := stream(); s.Metadata.Group = ""; return s }(), "stream.metadata.group", nil},
		{"stream slash name", func() proto.Message { s := stream(); s.Metadata.Name = "x/y"; return s }(), "stream.metadata.name", nil},
		{"stream no families", func() proto.Message { s := stream(); s.TagFamilies = nil; return s }(), "stream.tag_families", nil},
		{"stream family empty name", func() proto.Message { s := stream(); s.TagFamilies[1].Name = ""; return s }(), "stream.tag_families[1].name", nil},
		{"stream duplicate family", func() proto.Message { s := stream(); s.TagFamilies[1].Name = "searchable"; return s }(), "stream.tag_families[1].name", nil},
		{"stream tag slash", func() proto.Message { s := stream(); s.TagFamilies[0].Tags[1].Name = "a/b"; return s }(), "stream.tag_families[0].tags[1].name", nil},
		{"stream duplicate tag in family", func() proto.Message { s := stream(); s.TagFamilies[0].Tags[1].Name = "service"; return s }(), "stream.tag_families[0].tags[1].name", nil},
		{"stream duplicate tag across families", func() proto.Message { s := stream(); s.TagFamilies[1].Tags[0].Name = "service"; return s }(), "stream.tag_families[1].tags[0].name", nil},
		{"stream tag type unspecified", func() proto.Message { s := stream(); s.TagFamilies[1].Tags[0].Type = 0; return s }(), "stream.tag_families[1].tags[0].type", nil},
		{"stream tag type unknown", func() proto.Message { s := stream(); s.TagFamilies[0].Tags[0].Type = 99; return s }(), "stream.tag_families[0].tags[0].type", nil},
		{"stream no entity", func() proto.Message { s := stream(); s.Entity = nil; return s }(), "stream.entity.tag_names", nil},
		{"stream entity unknown tag", func() proto.Message { s := stream(); s.Entity.TagNames[1] = "nope"; return s }(), "stream.entity.tag_names[1]", nil},
		{"stream entity duplicate", func() proto.Message { s := stream(); s.Entity.TagNames[1] = "service"; return s }(), "stream.entity.tag_names[1]", nil},
		{"stream entity empty", func() proto.Message { s := stream(); s.Entity.TagNames[0] = ""; return s }(), "stream.entity.tag_names[0]", nil},

		{"measure no fields ok", func() proto.Message { m := measure(); m.Fields = nil; return m }(), "", nil},
		{"measure field empty name", func() proto.Message { m := measure(); m.Fields[0].Name = ""; return m }(), "measure.fields[0].name", nil},
		{"measure field clashes with tag", func() proto.Message { m := measure(); m.Fields[0].Name = "service"; return m }(), "measure.fields[0].name", nil},
		{"measure duplicate field", func() proto.Message {
			m := measure()
			m.Fields = append(m.Fields, &databasev1.FieldSpec{Name: "total", FieldType: databasev1.FieldType_FIELD_TYPE_INT})
			return m
		}(), "measure.fields[1].name", nil},
		{"measure field type unspecified", func() proto.Message { m := measure(); m.Fields[0].FieldType = 0; return m }(), "measure.fields[0].field_type", nil},
		{"measure field type unknown", func() proto.Message { m := measure(); m.Fields[0].FieldType = 17; return m }(), "measure.fields[0].field_type", nil},
		{"measure encoding unknown", func() proto.Message { m := measure(); m.Fields[0].EncodingMethod = 9; return m }(), "measure.fields[0].encoding_method", nil},
		{"measure compression unknown", func() proto.Message { m := measure(); m.Fields[0].CompressionMethod = 9; return m }(), "measure.fields[0].compression_method", nil},
		{"measure entity unknown", func() proto.Message { m := measure(); m.Entity.TagNames = []string{"nope"}; return m }(), "measure.entity.tag_names[0]", nil},
		{"measure sharding key unknown", func() proto.Message {
			m := measure()
			m.ShardingKey = &databasev1.ShardingKey{TagNames: []string{"service", "x"}}
			return m
		}(), "measure.sharding_key.tag_names[1]", nil},
		{"measure bad interval", func() proto.Message { m := measure(); m.Interval = "soon"; return m }(), "measure.interval", nil},
		{"measure unknown interval unit", func() proto.Message { m := measure(); m.Interval = "1x"; return m }(), "measure.interval", nil},
		{"measure negative day interval", func() proto.Message { m := measure(); m.Interval = "-1d"; return m }(), "measure.interval", nil},
		{"measure tag family NUL", func() proto.Message { m := measure(); m.TagFamilies[0].Name = "d\x00"; return m }(), "measure.tag_families[0].name", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.msg)
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("Validate = %v, want %v", err, tc.err)
				}
			case tc.field == "":
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
			default:
				var ia *InvalidArgumentError
				if !errors.As(err, &ia) || !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("Validate = %v, want InvalidArgumentError", err)
				}
				if ia.Field != tc.field || ia.Reason == "" {
					t.Fatalf("field %q (%s), want %q", ia.Field, ia.Reason, tc.field)
				}
			}
		})
	}
}

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key   Key
		field string
	}{
		{GroupKey("g"), ""},
		{StreamKey("g", "s"), ""},
		{MeasureKey("g", "m"), ""},
		{GroupKey(""), "group"},
		{StreamKey("", "s"), "metadata.group"},
		{MeasureKey("g", "a/b"), "metadata.name"},
		{Key{Kind: 9, Name: "x"}, "kind"},
	}
	for _, tc := range tests {
		err := ValidateKey(tc.key)
		var ia *InvalidArgumentError
		if tc.field == "" {
			if err != nil {
				t.Errorf("ValidateKey(%v) = %v", tc.key, err)
			}
		} else if !errors.As(err, &ia) || ia.Field != tc.field {
			t.Errorf("ValidateKey(%v) = %v, want field %q", tc.key, err, tc.field)
		}
	}
}

func TestCheckGroup(t *testing.T) {
	sg := group()
	mg := group()
	mg.Catalog = commonv1.Catalog_CATALOG_MEASURE
	tests := []struct {
		key  Key
		g    *commonv1.Group
		want error
	}{
		{StreamKey("g", "s"), sg, nil},
		{MeasureKey("g", "m"), mg, nil},
		{StreamKey("g", "s"), nil, ErrGroupNotFound},
		{StreamKey("g", "s"), mg, ErrFailedPrecondition},
		{MeasureKey("g", "m"), sg, ErrFailedPrecondition},
	}
	for _, tc := range tests {
		err := CheckGroup(tc.key, tc.g)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("CheckGroup(%v, %v) = %v, want %v", tc.key, tc.g.GetCatalog(), err, tc.want)
		}
	}
	if !errors.Is(ErrGroupNotFound, ErrFailedPrecondition) {
		t.Error("ErrGroupNotFound must be an ErrFailedPrecondition")
	}
}
