package registry

import (
	"fmt"
	"hash/crc32"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// Kind is the type of a schema object.
type Kind int

// The kinds of schema objects the registry holds. Every kind but groups
// lives in a group ("members").
const (
	KindGroup Kind = iota + 1
	KindStream
	KindMeasure
	KindIndexRule
	KindIndexRuleBinding
	KindTopNAggregation
	KindTrace
	KindProperty
)

// Kinds lists every kind, groups first.
var Kinds = [...]Kind{KindGroup, KindStream, KindMeasure, KindIndexRule, KindIndexRuleBinding, KindTopNAggregation, KindTrace, KindProperty}

// MemberKinds lists the kinds that live in a group: what a forced group
// delete removes with it.
var MemberKinds = Kinds[1:]

// kindSpec is what the registry knows of one kind.
type kindSpec struct {
	// name is the kind's name in storage keys and messages.
	name string
	// newMessage returns an empty message of the kind's type.
	newMessage func() proto.Message
	// catalogs are the catalogs of the groups a member of the kind may live in.
	catalogs []commonv1.Catalog
}

var (
	catalogStream   = commonv1.Catalog_CATALOG_STREAM
	catalogMeasure  = commonv1.Catalog_CATALOG_MEASURE
	catalogTrace    = commonv1.Catalog_CATALOG_TRACE
	catalogProperty = commonv1.Catalog_CATALOG_PROPERTY
)

var kinds = map[Kind]kindSpec{
	KindGroup:   {"group", func() proto.Message { return &commonv1.Group{} }, nil},
	KindStream:  {"stream", func() proto.Message { return &databasev1.Stream{} }, []commonv1.Catalog{catalogStream}},
	KindMeasure: {"measure", func() proto.Message { return &databasev1.Measure{} }, []commonv1.Catalog{catalogMeasure}},
	KindIndexRule: {"index-rule", func() proto.Message { return &databasev1.IndexRule{} },
		[]commonv1.Catalog{catalogStream, catalogMeasure, catalogTrace}},
	KindIndexRuleBinding: {"index-rule-binding", func() proto.Message { return &databasev1.IndexRuleBinding{} },
		[]commonv1.Catalog{catalogStream, catalogMeasure, catalogTrace}},
	KindTopNAggregation: {"topn-aggregation", func() proto.Message { return &databasev1.TopNAggregation{} },
		[]commonv1.Catalog{catalogMeasure}},
	KindTrace:    {"trace", func() proto.Message { return &databasev1.Trace{} }, []commonv1.Catalog{catalogTrace}},
	KindProperty: {"property", func() proto.Message { return &databasev1.Property{} }, []commonv1.Catalog{catalogProperty}},
}

// String is the kind's name as used in storage keys: group, stream,
// measure, index-rule, index-rule-binding, topn-aggregation, trace,
// property.
func (k Kind) String() string {
	if s, ok := kinds[k]; ok {
		return s.name
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool { _, ok := kinds[k]; return ok }

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, bool) {
	for _, k := range Kinds {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// Key identifies a schema object. A group's key has an empty Group and the
// group's name in Name.
type Key struct {
	Kind  Kind
	Group string
	Name  string
}

// GroupKey, StreamKey and MeasureKey build keys.
func GroupKey(name string) Key          { return Key{Kind: KindGroup, Name: name} }
func StreamKey(group, name string) Key  { return Key{Kind: KindStream, Group: group, Name: name} }
func MeasureKey(group, name string) Key { return Key{Kind: KindMeasure, Group: group, Name: name} }
func (k Key) String() string {
	if k.Kind == KindGroup {
		return "group " + k.Name
	}
	return k.Kind.String() + " " + k.Group + "/" + k.Name
}

// Object is a stored schema object. Message is the kind's message
// (*commonv1.Group, *databasev1.Stream, *databasev1.Measure,
// *databasev1.IndexRule, ...) whose metadata carries the registry's
// create_revision and mod_revision. Objects handed out by a store are owned
// by the receiver; stores never touch them again.
type Object struct {
	Key
	// Revision is the object's mod revision: the etcd revision of its last
	// write, or the local store's write counter.
	Revision int64
	Message  proto.Message
}

// kindOf is the kind of a schema message, 0 for anything else.
func kindOf(m proto.Message) Kind {
	switch m.(type) {
	case *commonv1.Group:
		return KindGroup
	case *databasev1.Stream:
		return KindStream
	case *databasev1.Measure:
		return KindMeasure
	case *databasev1.IndexRule:
		return KindIndexRule
	case *databasev1.IndexRuleBinding:
		return KindIndexRuleBinding
	case *databasev1.TopNAggregation:
		return KindTopNAggregation
	case *databasev1.Trace:
		return KindTrace
	case *databasev1.Property:
		return KindProperty
	}
	return 0
}

// KeyOf returns the key of a schema message without validating it further.
func KeyOf(m proto.Message) (Key, error) {
	if m == nil {
		return Key{}, invalid("object", "missing")
	}
	kind := kindOf(m)
	if kind == 0 {
		return Key{}, invalid("object", "unsupported schema type %T", m)
	}
	md := Metadata(m)
	if kind == KindGroup {
		return GroupKey(md.GetName()), nil
	}
	return Key{Kind: kind, Group: md.GetGroup(), Name: md.GetName()}, nil
}

// NewMessage returns an empty message of the kind's type, for decoding.
func NewMessage(k Kind) (proto.Message, error) {
	if s, ok := kinds[k]; ok {
		return s.newMessage(), nil
	}
	return nil, fmt.Errorf("registry: unknown kind %d", int(k))
}

// Metadata returns the message's metadata, or nil.
func Metadata(m proto.Message) *commonv1.Metadata {
	if v, ok := m.(interface{ GetMetadata() *commonv1.Metadata }); ok && kindOf(m) != 0 {
		return v.GetMetadata()
	}
	return nil
}

// Stamp records the registry's revisions in m's metadata. Stores call it;
// revisions a client sends are never trusted.
func Stamp(m proto.Message, createRev, modRev int64) {
	if md := Metadata(m); md != nil {
		md.CreateRevision, md.ModRevision = createRev, modRev
	}
}

// SetUpdatedAt sets the message's updated_at (every kind has one); nil
// clears it.
func SetUpdatedAt(m proto.Message, ts *timestamppb.Timestamp) {
	if kindOf(m) == 0 {
		return
	}
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("updated_at")
	switch {
	case fd == nil:
	case ts == nil:
		r.Clear(fd)
	default:
		r.Set(fd, protoreflect.ValueOfMessage(ts.ProtoReflect()))
	}
}

// Prepare fills what the registry derives before storing m, as BanyanDB
// does: an index rule without an id gets crc32(group + name).
func Prepare(m proto.Message) {
	if r, ok := m.(*databasev1.IndexRule); ok && r.GetMetadata().GetId() == 0 && r.GetMetadata() != nil {
		r.Metadata.Id = crc32.ChecksumIEEE([]byte(r.GetMetadata().GetGroup() + r.GetMetadata().GetName()))
	}
}

// CheckGroup reports whether a member with key k may live in group g (nil
// when the group does not exist): ErrGroupNotFound or an
// ErrFailedPrecondition naming the catalog mismatch.
func CheckGroup(k Key, g *commonv1.Group) error {
	if g == nil {
		return fmt.Errorf("%s: %q: %w", k, k.Group, ErrGroupNotFound)
	}
	want := kinds[k.Kind].catalogs
	for _, c := range want {
		if g.GetCatalog() == c {
			return nil
		}
	}
	names := make([]string, len(want))
	for i, c := range want {
		names[i] = c.String()
	}
	return fmt.Errorf("%s: group %q has catalog %s, want %s: %w",
		k, k.Group, g.GetCatalog(), strings.Join(names, " or "), ErrFailedPrecondition)
}

// SchemaInfo lists the members a group delete removes (or would remove).
func SchemaInfo(members []Key) *databasev1.SchemaInfo {
	info := &databasev1.SchemaInfo{}
	for _, k := range members {
		if l := schemaInfoList(info, k.Kind); l != nil {
			*l = append(*l, k.Name)
		}
	}
	return info
}

func schemaInfoList(info *databasev1.SchemaInfo, k Kind) *[]string {
	switch k {
	case KindStream:
		return &info.Streams
	case KindMeasure:
		return &info.Measures
	case KindIndexRule:
		return &info.IndexRules
	case KindIndexRuleBinding:
		return &info.IndexRuleBindings
	case KindTopNAggregation:
		return &info.TopnAggregations
	case KindTrace:
		return &info.Traces
	case KindProperty:
		return &info.Properties
	}
	return nil
}

// NonEmptyGroupError is the ErrFailedPrecondition returned when a group that
// still holds members is deleted without force.
func NonEmptyGroupError(group string, info *databasev1.SchemaInfo) error {
	var held []string
	for _, k := range MemberKinds {
		if names := *schemaInfoList(info, k); len(names) > 0 {
			held = append(held, fmt.Sprintf("%d %s(s) %q", len(names), k, names))
		}
	}
	return fmt.Errorf("group %q still holds %s; delete them or use force: %w",
		group, strings.Join(held, ", "), ErrFailedPrecondition)
}
