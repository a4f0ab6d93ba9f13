package liaison

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// TestFitStream: one group of a multi-group query is asked for the tags
// its schema has, and its elements come back laid out as the client
// asked, null where the schema lacks the tag; a group that has every tag
// is asked as is.
func TestFitStream(t *testing.T) {
	proj := &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{
		{Name: "a", Tags: []string{"x", "new", "y"}},
		{Name: "b", Tags: []string{"only_new"}},
	}}
	old := &databasev1.Stream{TagFamilies: []*databasev1.TagFamilySpec{
		{Name: "a", Tags: []*databasev1.TagSpec{{Name: "x"}, {Name: "y"}}},
	}}
	current := &databasev1.Stream{TagFamilies: []*databasev1.TagFamilySpec{
		{Name: "a", Tags: []*databasev1.TagSpec{{Name: "x"}, {Name: "new"}, {Name: "y"}}},
		{Name: "b", Tags: []*databasev1.TagSpec{{Name: "only_new"}}},
	}}
	if err := checkProjected(proj, [][]*databasev1.TagFamilySpec{old.GetTagFamilies(), current.GetTagFamilies()}); err != nil {
		t.Fatalf("a tag one group has: %v", err)
	}
	if err := checkProjected(proj, [][]*databasev1.TagFamilySpec{old.GetTagFamilies()}); err == nil {
		t.Fatal("a tag no group has was accepted")
	}

	one := &streamv1.QueryRequest{Projection: proto.CloneOf(proj)}
	if fill := fitStream(one, current); fill != nil || !proto.Equal(one.GetProjection(), proj) {
		t.Fatalf("a group with every tag: projection %v, fill %v", one.GetProjection(), fill != nil)
	}
	one = &streamv1.QueryRequest{Projection: proto.CloneOf(proj)}
	fill := fitStream(one, old)
	wantAsked := &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "a", Tags: []string{"x", "y"}}}}
	if fill == nil || !proto.Equal(one.GetProjection(), wantAsked) {
		t.Fatalf("older group asked for %v, want %v", one.GetProjection(), wantAsked)
	}
	el := &streamv1.Element{ElementId: "e", TagFamilies: []*modelv1.TagFamily{
		{Name: "a", Tags: []*modelv1.Tag{{Key: "x", Value: vStr("1")}, {Key: "y", Value: vStr("2")}}},
	}}
	fill(el)
	want := []*modelv1.TagFamily{
		{Name: "a", Tags: []*modelv1.Tag{{Key: "x", Value: vStr("1")}, {Key: "new", Value: nullTag()}, {Key: "y", Value: vStr("2")}}},
		{Name: "b", Tags: []*modelv1.Tag{{Key: "only_new", Value: nullTag()}}},
	}
	if diff := cmp.Diff(want, el.GetTagFamilies(), protocmp.Transform()); diff != "" {
		t.Errorf("filled element (-want +got):\n%s", diff)
	}
}
