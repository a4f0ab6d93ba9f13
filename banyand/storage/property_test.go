package storage

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/queue"
)

func propertySchema() *databasev1.Property {
	return &databasev1.Property{
		Metadata: &commonv1.Metadata{Group: testGroup, Name: "ui"},
		Tags: []*databasev1.TagSpec{
			{Name: "config", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "disabled", Type: databasev1.TagType_TAG_TYPE_INT},
		},
	}
}

func intTag(k string, v int64) *modelv1.Tag {
	return &modelv1.Tag{Key: k, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: v}}}}
}

func strPropTag(k, v string) *modelv1.Tag {
	return &modelv1.Tag{Key: k, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: v}}}}
}

func propertyMsg(t testing.TB, id string, rev int64, strategy propertyv1.ApplyRequest_Strategy, del bool, tags ...*modelv1.Tag) []byte {
	t.Helper()
	sk, err := schema.PropertySeriesKey(nil, "ui", id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&clusterv1.PropertyWrite{
		SeriesKey: sk, Strategy: strategy, Delete: del,
		Property: &propertyv1.Property{Metadata: &commonv1.Metadata{Group: testGroup, Name: "ui", ModRevision: rev}, Id: id, Tags: tags},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func queryProperties(t testing.TB, s *Store, req *propertyv1.QueryRequest) map[string]*clusterv1.StoredProperty {
	t.Helper()
	req.Groups = []string{testGroup}
	res, err := s.QueryProperties(context.Background(), &clusterv1.PropertyQuery{Request: req, Schemas: []*databasev1.Property{propertySchema()}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*clusterv1.StoredProperty{}
	for _, sp := range res.GetProperties() {
		out[sp.GetProperty().GetId()] = sp
	}
	return out
}

func writeProperties(t testing.TB, s *Store, msgs ...[]byte) {
	t.Helper()
	for i, err := range s.WriteProperties(context.Background(), msgs) {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
}

// Merge, replace, stragglers and deletes as a data node applies them, and
// the result survives a restart (the write-ahead log replays it).
func TestPropertyWritesMergeAndSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	merge, replace := propertyv1.ApplyRequest_STRATEGY_MERGE, propertyv1.ApplyRequest_STRATEGY_REPLACE
	writeProperties(t, s,
		propertyMsg(t, "a", 10, merge, false, strPropTag("config", "a1"), intTag("disabled", 0)),
		propertyMsg(t, "a", 11, merge, false, intTag("disabled", 1)), // same batch: merged into the first
		propertyMsg(t, "b", 10, merge, false, strPropTag("config", "b1"), intTag("disabled", 0)),
		propertyMsg(t, "c", 10, merge, false, strPropTag("config", "c1")),
	)
	writeProperties(t, s,
		propertyMsg(t, "b", 12, replace, false, intTag("disabled", 1)),
		propertyMsg(t, "a", 9, replace, false, strPropTag("config", "straggler")), // older: ignored
		propertyMsg(t, "c", 13, merge, true),
		propertyMsg(t, "c", 12, merge, false, strPropTag("config", "before the delete")),
	)
	check := func(stage string) {
		t.Helper()
		got := queryProperties(t, s, &propertyv1.QueryRequest{})
		a, b, c := got["a"], got["b"], got["c"]
		if a == nil || len(a.GetProperty().GetTags()) != 2 || a.GetProperty().GetTags()[0].GetKey() != "disabled" ||
			a.GetProperty().GetTags()[1].GetValue().GetStr().GetValue() != "a1" || schema.Revision(a.GetProperty()) != 11 ||
			a.GetProperty().GetMetadata().GetCreateRevision() != 10 {
			t.Fatalf("%s: a = %v, want merged {disabled 1, config a1} at revision 11 created at 10", stage, a)
		}
		if b == nil || len(b.GetProperty().GetTags()) != 1 || b.GetProperty().GetTags()[0].GetKey() != "disabled" {
			t.Fatalf("%s: b = %v, want replaced by {disabled 1}", stage, b)
		}
		if c == nil || !c.GetDeleted() || schema.Revision(c.GetProperty()) != 13 {
			t.Fatalf("%s: c = %v, want a tombstone at revision 13", stage, c)
		}
		eq := &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
			Name: "disabled", Op: modelv1.Condition_BINARY_OP_EQ, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: 1}}},
		}}}
		byID := queryProperties(t, s, &propertyv1.QueryRequest{Ids: []string{"b"}, Criteria: eq})
		if len(byID) != 1 || byID["b"] == nil {
			t.Fatalf("%s: ids [b] and disabled = 1 read %v", stage, byID)
		}
	}
	check("written")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	check("reopened")

	_, err := s.QueryProperties(context.Background(), &clusterv1.PropertyQuery{
		Request: &propertyv1.QueryRequest{Groups: []string{testGroup}, Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
			Name: "nope", Op: modelv1.Condition_BINARY_OP_EQ, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: 1}}},
		}}}},
		Schemas: []*databasev1.Property{propertySchema()},
	})
	if !errors.Is(err, queue.ErrInvalidMessage) {
		t.Fatalf("criteria on an unknown tag: %v, want an invalid message", err)
	}
	if errs := s.WriteProperties(context.Background(), [][]byte{propertyMsg(t, "", 20, merge, false)}); len(errs) != 1 || !errors.Is(errs[0], queue.ErrInvalidMessage) {
		t.Fatalf("a write without id: %v", errs)
	}
}

// A merge lands on the latest record this node or the liaison knows: a
// copy re-placed on a node that never held the property merges into the
// base the liaison read; a node holding a later record than that base (a
// concurrent apply landed first) merges into its own.
func TestPropertyMergeIntoTheLatestBase(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	merge := propertyv1.ApplyRequest_STRATEGY_MERGE
	withBase := func(msg []byte, base *clusterv1.StoredProperty) []byte {
		var w clusterv1.PropertyWrite
		if err := proto.Unmarshal(msg, &w); err != nil {
			t.Fatal(err)
		}
		w.Base = base
		b, err := proto.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base := &clusterv1.StoredProperty{Property: &propertyv1.Property{
		Metadata: &commonv1.Metadata{Group: testGroup, Name: "ui", ModRevision: 10, CreateRevision: 5}, Id: "a",
		Tags: []*modelv1.Tag{strPropTag("config", "from base"), intTag("disabled", 0)},
	}}
	writeProperties(t, s, withBase(propertyMsg(t, "a", 20, merge, false, intTag("disabled", 1)), base))
	a := queryProperties(t, s, &propertyv1.QueryRequest{})["a"]
	if len(a.GetProperty().GetTags()) != 2 || a.GetProperty().GetTags()[1].GetValue().GetStr().GetValue() != "from base" ||
		a.GetProperty().GetMetadata().GetCreateRevision() != 5 {
		t.Fatalf("a node without the property merged into %v, want the base's config and create revision", a)
	}
	// This node now holds revision 20, later than a base of revision 10
	// another liaison read: that write's merge goes into revision 20.
	writeProperties(t, s, withBase(propertyMsg(t, "a", 30, merge, false, strPropTag("config", "new")), base))
	a = queryProperties(t, s, &propertyv1.QueryRequest{})["a"]
	if got := a.GetProperty().GetTags(); len(got) != 2 || got[1].GetValue().GetInt().GetValue() != 1 {
		t.Fatalf("merged over a later record than its base: %v, want disabled = 1 kept", got)
	}
}
