package schema

import (
	"cmp"
	"slices"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	"github.com/banyand-io/banyand/pkg/route"
	"github.com/banyand-io/banyand/pkg/wire"
)

// DefaultPropertyLimit is a property query's limit when it asks for 0, as
// in BanyanDB v0.10 (banyand/liaison/grpc/property.go).
const DefaultPropertyLimit = 100

// PropertySeriesKey is the series key of property (name, id): the shard
// is route.ShardID of it, and data nodes key the record by its hash and
// the id.
func PropertySeriesKey(dst []byte, name, id string) ([]byte, error) {
	return route.AppendSeriesKey(dst, name, []route.EntityValue{route.StrValue(id)})
}

// MergeTags is STRATEGY_MERGE: the tags sent, then those of prev that
// were not sent, in prev's order (BanyanDB's order).
func MergeTags(prev, sent []*modelv1.Tag) []*modelv1.Tag {
	out := make([]*modelv1.Tag, 0, len(prev)+len(sent))
	out = append(out, sent...)
	for _, t := range prev {
		if !hasTag(sent, t.GetKey()) {
			out = append(out, t)
		}
	}
	return out
}

func hasTag(tags []*modelv1.Tag, key string) bool {
	for _, t := range tags {
		if t.GetKey() == key {
			return true
		}
	}
	return false
}

// Revision is a property's revision: its metadata's mod_revision.
func Revision(p *propertyv1.Property) int64 { return p.GetMetadata().GetModRevision() }

// ApplyProperty is the revision rule of a data node: cur is the record
// it holds for the property (nil: none), w a write of it. A write whose
// revision is not above cur's changes nothing (a redelivery, or a
// straggler a later revision already superseded), so the highest
// revision wins whatever order writes arrive in. Otherwise the result is
// w's property, its tags merged into cur's live ones unless w replaces or
// deletes; a delete keeps a tombstone carrying its revision, so that an
// older write arriving after it changes nothing either. create_revision
// is the first live revision's.
func ApplyProperty(cur *clusterv1.StoredProperty, w *clusterv1.PropertyWrite) (*clusterv1.StoredProperty, bool) {
	rev := Revision(w.GetProperty())
	if cur != nil && Revision(cur.GetProperty()) >= rev {
		return cur, false
	}
	p := proto.CloneOf(w.GetProperty())
	live := cur != nil && !cur.GetDeleted()
	p.Metadata.CreateRevision = rev
	if live {
		p.Metadata.CreateRevision = cur.GetProperty().GetMetadata().GetCreateRevision()
	}
	switch {
	case w.GetDelete():
		p.Tags = nil
		return &clusterv1.StoredProperty{Property: p, Deleted: true}, true
	case live && w.GetStrategy() != propertyv1.ApplyRequest_STRATEGY_REPLACE:
		p.Tags = MergeTags(cur.GetProperty().GetTags(), p.GetTags())
	}
	return &clusterv1.StoredProperty{Property: p}, true
}

// SortProperties orders properties as a query answers them: by the
// order_by tag's value when there is one (nulls and values of another
// type first, descending reverses it), then by group, name and id. The
// liaison sorts merged answers with it too.
func SortProperties[T any](items []T, key func(T) (*modelv1.TagValue, *clusterv1.StoredProperty), desc bool) {
	slices.SortStableFunc(items, func(a, b T) int {
		va, pa := key(a)
		vb, pb := key(b)
		if c := compareOrderValues(va, vb); c != 0 {
			if desc {
				return -c
			}
			return c
		}
		ma, mb := pa.GetProperty().GetMetadata(), pb.GetProperty().GetMetadata()
		return cmp.Or(cmp.Compare(ma.GetGroup(), mb.GetGroup()), cmp.Compare(ma.GetName(), mb.GetName()),
			cmp.Compare(pa.GetProperty().GetId(), pb.GetProperty().GetId()))
	})
}

func compareOrderValues(a, b *modelv1.TagValue) int {
	if a == nil || b == nil || a.GetValue() == nil || b.GetValue() == nil {
		return cmp.Compare(boolInt(a.GetValue() != nil), boolInt(b.GetValue() != nil))
	}
	if c, ok := CompareTagValues(a, b); ok {
		return c
	}
	return cmp.Compare(TagValueKind(a), TagValueKind(b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CompareTagValues orders a stored value against a query value of the same
// scalar type; ok is false when the types differ (no match).
func CompareTagValues(got, want *modelv1.TagValue) (c int, ok bool) {
	switch w := want.GetValue().(type) {
	case *modelv1.TagValue_Int:
		if g, ok := got.GetValue().(*modelv1.TagValue_Int); ok {
			return cmp.Compare(g.Int.GetValue(), w.Int.GetValue()), true
		}
	case *modelv1.TagValue_Str:
		if g, ok := got.GetValue().(*modelv1.TagValue_Str); ok {
			return cmp.Compare(g.Str.GetValue(), w.Str.GetValue()), true
		}
	case *modelv1.TagValue_Timestamp:
		if g, ok := got.GetValue().(*modelv1.TagValue_Timestamp); ok {
			if c := cmp.Compare(g.Timestamp.GetSeconds(), w.Timestamp.GetSeconds()); c != 0 {
				return c, true
			}
			return cmp.Compare(g.Timestamp.GetNanos(), w.Timestamp.GetNanos()), true
		}
	}
	return 0, false
}

// CompareTagKeys orders two stored values of a tag a query orders by:
// nulls (and values of no orderable type) lowest, then ints, strings and
// timestamps, each by value.
func CompareTagKeys(a, b *modelv1.TagValue) int {
	if c := cmp.Compare(orderRank(a), orderRank(b)); c != 0 {
		return c
	}
	c, _ := CompareTagValues(a, b)
	return c
}

func orderRank(v *modelv1.TagValue) int {
	switch v.GetValue().(type) {
	case *modelv1.TagValue_Int:
		return 1
	case *modelv1.TagValue_Str:
		return 2
	case *modelv1.TagValue_Timestamp:
		return 3
	}
	return 0
}

// TagValueKind is the kind of v's member, as the wire parser names it:
// the write rules check a value's type by it, and orders and messages
// name it.
func TagValueKind(v *modelv1.TagValue) wire.Kind {
	switch v.GetValue().(type) {
	case *modelv1.TagValue_Null:
		return wire.KindNull
	case *modelv1.TagValue_Str:
		return wire.KindStr
	case *modelv1.TagValue_StrArray:
		return wire.KindStrArray
	case *modelv1.TagValue_Int:
		return wire.KindInt
	case *modelv1.TagValue_IntArray:
		return wire.KindIntArray
	case *modelv1.TagValue_BinaryData:
		return wire.KindBinary
	case *modelv1.TagValue_Timestamp:
		return wire.KindTimestamp
	}
	return wire.KindNone
}
