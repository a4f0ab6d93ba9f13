package registry

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/route"
)

// Validate checks a schema object on its own, without looking at other
// objects (CheckDependencies does that). It returns nil or an
// *InvalidArgumentError naming the first bad field.
func Validate(m proto.Message) error {
	switch v := m.(type) {
	case *commonv1.Group:
		return validateGroup(v)
	case *databasev1.Stream:
		return validateStream(v)
	case *databasev1.Measure:
		return validateMeasure(v)
	case *databasev1.IndexRule:
		return validateIndexRule(v)
	case *databasev1.IndexRuleBinding:
		return validateIndexRuleBinding(v)
	case *databasev1.TopNAggregation:
		return validateTopNAggregation(v)
	case *databasev1.Trace:
		return validateTrace(v)
	case *databasev1.Property:
		return validateProperty(v)
	}
	_, err := KeyOf(m)
	return err
}

// validName refuses what would break a storage key or a log line.
func validName(field, name string) error {
	switch {
	case name == "":
		return invalid(field, "must not be empty")
	case strings.ContainsRune(name, '/'):
		return invalid(field, "%q must not contain '/'", name)
	case strings.ContainsRune(name, 0):
		return invalid(field, "%q must not contain NUL", name)
	}
	return nil
}

func validateGroup(g *commonv1.Group) error {
	if g.GetMetadata() == nil {
		return invalid("group.metadata", "required")
	}
	if err := validName("group.metadata.name", g.GetMetadata().GetName()); err != nil {
		return err
	}
	switch c := g.GetCatalog(); c {
	case commonv1.Catalog_CATALOG_STREAM, commonv1.Catalog_CATALOG_MEASURE, commonv1.Catalog_CATALOG_TRACE,
		commonv1.Catalog_CATALOG_PROPERTY:
	case commonv1.Catalog_CATALOG_UNSPECIFIED:
		return invalid("group.catalog", "required")
	default:
		return invalid("group.catalog", "unknown value %d", int32(c))
	}
	ro := g.GetResourceOpts()
	if ro == nil {
		return invalid("group.resource_opts", "required")
	}
	if ro.GetShardNum() < 1 || ro.GetShardNum() > route.MaxShardNum {
		return invalid("group.resource_opts.shard_num", "must be 1..%d, got %d", route.MaxShardNum, ro.GetShardNum())
	}
	if g.GetCatalog() == commonv1.Catalog_CATALOG_PROPERTY {
		// Properties are records, not time series: BanyanDB refuses time
		// options on their groups.
		if ro.GetSegmentInterval() != nil {
			return invalid("group.resource_opts.segment_interval", "must be absent in a %s group", g.GetCatalog())
		}
		if ro.GetTtl() != nil {
			return invalid("group.resource_opts.ttl", "must be absent in a %s group", g.GetCatalog())
		}
	}
	for _, r := range []struct {
		field string
		rule  *commonv1.IntervalRule
	}{
		{"group.resource_opts.segment_interval", ro.GetSegmentInterval()},
		{"group.resource_opts.ttl", ro.GetTtl()},
	} {
		if err := validInterval(r.field, r.rule); err != nil {
			return err
		}
	}
	return nil
}

// validInterval accepts an absent rule; a present one needs a unit and a
// positive count.
func validInterval(field string, r *commonv1.IntervalRule) error {
	if r == nil {
		return nil
	}
	u := r.GetUnit()
	if u == commonv1.IntervalRule_UNIT_UNSPECIFIED {
		return invalid(field+".unit", "required")
	}
	if _, ok := commonv1.IntervalRule_Unit_name[int32(u)]; !ok {
		return invalid(field+".unit", "unknown value %d", int32(u))
	}
	if r.GetNum() < 1 {
		return invalid(field+".num", "must be at least 1")
	}
	return nil
}

func validMember(kind string, md *commonv1.Metadata) error {
	if md == nil {
		return invalid(kind+".metadata", "required")
	}
	if err := validName(kind+".metadata.group", md.GetGroup()); err != nil {
		return err
	}
	return validName(kind+".metadata.name", md.GetName())
}

// validTagFamilies checks names and types and returns the set of tag names.
// Tag names are unique across families: entities and writes refer to tags
// by name alone.
func validTagFamilies(kind string, fams []*databasev1.TagFamilySpec) (map[string]bool, error) {
	if len(fams) == 0 {
		return nil, invalid(kind+".tag_families", "at least one tag family is required")
	}
	famSeen := make(map[string]bool, len(fams))
	tags := make(map[string]bool)
	for i, f := range fams {
		ff := fmt.Sprintf("%s.tag_families[%d]", kind, i)
		if err := validName(ff+".name", f.GetName()); err != nil {
			return nil, err
		}
		if famSeen[f.GetName()] {
			return nil, invalid(ff+".name", "duplicate tag family %q", f.GetName())
		}
		famSeen[f.GetName()] = true
		for j, t := range f.GetTags() {
			if err := validTag(fmt.Sprintf("%s.tags[%d]", ff, j), t.GetName(), t.GetType(), tags); err != nil {
				return nil, err
			}
		}
	}
	return tags, nil
}

// validTag checks one tag declaration and adds its name to tags, the names
// declared so far.
func validTag(field, name string, typ databasev1.TagType, tags map[string]bool) error {
	if err := validName(field+".name", name); err != nil {
		return err
	}
	if tags[name] {
		return invalid(field+".name", "duplicate tag %q", name)
	}
	tags[name] = true
	if typ == databasev1.TagType_TAG_TYPE_UNSPECIFIED {
		return invalid(field+".type", "required")
	}
	if _, ok := databasev1.TagType_name[int32(typ)]; !ok {
		return invalid(field+".type", "unknown value %d", int32(typ))
	}
	return nil
}

// validTagRefs checks a list of tag names (entity, sharding key) against the
// declared tags.
func validTagRefs(field string, names []string, tags map[string]bool, required bool) error {
	if required && len(names) == 0 {
		return invalid(field, "at least one tag is required")
	}
	if err := validNames(field, names, false); err != nil {
		return err
	}
	for i, n := range names {
		if !tags[n] {
			return invalid(fmt.Sprintf("%s[%d]", field, i), "tag %q is not declared in any tag family", n)
		}
	}
	return nil
}

func validateStream(s *databasev1.Stream) error {
	if err := validMember("stream", s.GetMetadata()); err != nil {
		return err
	}
	tags, err := validTagFamilies("stream", s.GetTagFamilies())
	if err != nil {
		return err
	}
	return validTagRefs("stream.entity.tag_names", s.GetEntity().GetTagNames(), tags, true)
}

func validateMeasure(m *databasev1.Measure) error {
	if err := validMember("measure", m.GetMetadata()); err != nil {
		return err
	}
	tags, err := validTagFamilies("measure", m.GetTagFamilies())
	if err != nil {
		return err
	}
	fields := make(map[string]bool, len(m.GetFields()))
	for i, f := range m.GetFields() {
		ff := fmt.Sprintf("measure.fields[%d]", i)
		if err := validName(ff+".name", f.GetName()); err != nil {
			return err
		}
		if fields[f.GetName()] || tags[f.GetName()] {
			return invalid(ff+".name", "duplicate name %q (field names are unique among tags and fields)", f.GetName())
		}
		fields[f.GetName()] = true
		if f.GetFieldType() == databasev1.FieldType_FIELD_TYPE_UNSPECIFIED {
			return invalid(ff+".field_type", "required")
		}
		if _, ok := databasev1.FieldType_name[int32(f.GetFieldType())]; !ok {
			return invalid(ff+".field_type", "unknown value %d", int32(f.GetFieldType()))
		}
		if _, ok := databasev1.EncodingMethod_name[int32(f.GetEncodingMethod())]; !ok {
			return invalid(ff+".encoding_method", "unknown value %d", int32(f.GetEncodingMethod()))
		}
		if _, ok := databasev1.CompressionMethod_name[int32(f.GetCompressionMethod())]; !ok {
			return invalid(ff+".compression_method", "unknown value %d", int32(f.GetCompressionMethod()))
		}
	}
	if err := validTagRefs("measure.entity.tag_names", m.GetEntity().GetTagNames(), tags, true); err != nil {
		return err
	}
	if err := validTagRefs("measure.sharding_key.tag_names", m.GetShardingKey().GetTagNames(), tags, false); err != nil {
		return err
	}
	if iv := m.GetInterval(); iv != "" {
		d, err := ParseDuration(iv)
		if err != nil || d <= 0 {
			return invalid("measure.interval", "%q is not a positive duration such as 1m, 1h or 1d", iv)
		}
	}
	return nil
}

// ValidateKey checks a key taken from a request (Get, Delete) before it is
// used to build a storage key.
func ValidateKey(k Key) error {
	switch {
	case k.Kind == KindGroup:
		return validName("group", k.Name)
	case k.Kind.Valid():
		if err := validName("metadata.group", k.Group); err != nil {
			return err
		}
		return validName("metadata.name", k.Name)
	}
	return invalid("kind", "unknown kind %d", int(k.Kind))
}
