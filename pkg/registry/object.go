package registry

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// Kind is the type of a schema object.
type Kind int

// The kinds of schema objects the registry holds.
const (
	KindGroup Kind = iota + 1
	KindStream
	KindMeasure
)

// Kinds lists every kind, groups first.
var Kinds = [...]Kind{KindGroup, KindStream, KindMeasure}

// String is the kind's name as used in storage keys: group, stream, measure.
func (k Kind) String() string {
	switch k {
	case KindGroup:
		return "group"
	case KindStream:
		return "stream"
	case KindMeasure:
		return "measure"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool { return k >= KindGroup && k <= KindMeasure }

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

// Object is a stored schema object. Message is a *commonv1.Group,
// *databasev1.Stream or *databasev1.Measure whose metadata carries the
// registry's create_revision and mod_revision. Objects handed out by a
// store are owned by the receiver; stores never touch them again.
type Object struct {
	Key
	// Revision is the object's mod revision: the etcd revision of its last
	// write, or the local store's write counter.
	Revision int64
	Message  proto.Message
}

// KeyOf returns the key of a schema message without validating it further.
func KeyOf(m proto.Message) (Key, error) {
	switch v := m.(type) {
	case *commonv1.Group:
		return GroupKey(v.GetMetadata().GetName()), nil
	case *databasev1.Stream:
		return StreamKey(v.GetMetadata().GetGroup(), v.GetMetadata().GetName()), nil
	case *databasev1.Measure:
		return MeasureKey(v.GetMetadata().GetGroup(), v.GetMetadata().GetName()), nil
	case nil:
		return Key{}, invalid("object", "missing")
	}
	return Key{}, invalid("object", "unsupported schema type %T", m)
}

// NewMessage returns an empty message of the kind's type, for decoding.
func NewMessage(k Kind) (proto.Message, error) {
	switch k {
	case KindGroup:
		return &commonv1.Group{}, nil
	case KindStream:
		return &databasev1.Stream{}, nil
	case KindMeasure:
		return &databasev1.Measure{}, nil
	}
	return nil, fmt.Errorf("registry: unknown kind %d", int(k))
}

// Metadata returns the message's metadata, or nil.
func Metadata(m proto.Message) *commonv1.Metadata {
	switch v := m.(type) {
	case *commonv1.Group:
		return v.GetMetadata()
	case *databasev1.Stream:
		return v.GetMetadata()
	case *databasev1.Measure:
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

// SetUpdatedAt sets the message's updated_at.
func SetUpdatedAt(m proto.Message, ts *timestamppb.Timestamp) {
	switch v := m.(type) {
	case *commonv1.Group:
		v.UpdatedAt = ts
	case *databasev1.Stream:
		v.UpdatedAt = ts
	case *databasev1.Measure:
		v.UpdatedAt = ts
	}
}

// CheckGroup reports whether a stream or measure with key k may live in
// group g (nil when the group does not exist): ErrGroupNotFound or an
// ErrFailedPrecondition naming the catalog mismatch.
func CheckGroup(k Key, g *commonv1.Group) error {
	if g == nil {
		return fmt.Errorf("%s: %q: %w", k, k.Group, ErrGroupNotFound)
	}
	want := commonv1.Catalog_CATALOG_STREAM
	if k.Kind == KindMeasure {
		want = commonv1.Catalog_CATALOG_MEASURE
	}
	if g.GetCatalog() != want {
		return fmt.Errorf("%s: group %q has catalog %s, want %s: %w",
			k, k.Group, g.GetCatalog(), want, ErrFailedPrecondition)
	}
	return nil
}

// SchemaInfo lists the members a group delete removes (or would remove).
func SchemaInfo(members []Key) *databasev1.SchemaInfo {
	info := &databasev1.SchemaInfo{}
	for _, k := range members {
		switch k.Kind {
		case KindStream:
			info.Streams = append(info.Streams, k.Name)
		case KindMeasure:
			info.Measures = append(info.Measures, k.Name)
		}
	}
	return info
}

// NonEmptyGroupError is the ErrFailedPrecondition returned when a group that
// still holds streams or measures is deleted without force.
func NonEmptyGroupError(group string, info *databasev1.SchemaInfo) error {
	return fmt.Errorf("group %q still holds %d stream(s) %q and %d measure(s) %q; delete them or use force: %w",
		group, len(info.GetStreams()), info.GetStreams(), len(info.GetMeasures()), info.GetMeasures(), ErrFailedPrecondition)
}
