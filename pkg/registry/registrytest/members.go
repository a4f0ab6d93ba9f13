package registrytest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	"github.com/banyand-io/banyand/pkg/registry"
)

// testMembers covers the kinds besides streams and measures: index rules,
// bindings, TopN aggregations, traces and properties, each in a group of
// its catalog.
func testMembers(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	mustCreate(t, s, NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE))
	mustCreate(t, s, NewGroup("tw", commonv1.Catalog_CATALOG_TRACE))
	mustCreate(t, s, NewGroup("pw", commonv1.Catalog_CATALOG_PROPERTY))
	mustCreate(t, s, NewMeasure("mw", "cpu"))
	objs := []proto.Message{
		NewIndexRule("mw", "service", "service"),
		NewIndexRuleBinding("mw", "cpu", commonv1.Catalog_CATALOG_MEASURE, "cpu", "service"),
		NewTopNAggregation("mw", "top_cpu", "cpu"),
		NewTrace("tw", "segment"),
		NewProperty("pw", "ui_template"),
	}
	for _, m := range objs {
		rev := mustCreate(t, s, m)
		k, _ := registry.KeyOf(m)
		got, err := s.Get(ctx, k)
		if err != nil {
			t.Fatalf("get %s: %v", k, err)
		}
		if got.Revision != rev || registry.Metadata(got.Message).GetModRevision() != rev {
			t.Fatalf("%s: revision %d (metadata %d), want %d", k, got.Revision, registry.Metadata(got.Message).GetModRevision(), rev)
		}
		// What a client sent comes back as sent, apart from what the
		// registry stamps (revisions, updated_at, an index rule's id):
		// OAP compares that way and updates whatever differs.
		sent, back := proto.Clone(m), proto.Clone(got.Message)
		registry.SetUpdatedAt(back, nil)
		registry.Metadata(sent).Reset()
		registry.Metadata(back).Reset()
		if !proto.Equal(sent, back) {
			t.Fatalf("%s: stored %v, sent %v", k, back, sent)
		}
		_, err = s.Create(ctx, m)
		wantErr(t, err, registry.ErrAlreadyExists, "duplicate "+k.String())
		if _, err := s.Update(ctx, m); err != nil {
			t.Fatalf("update %s: %v", k, err)
		}
		listed, err := s.List(ctx, k.Kind, k.Group)
		if err != nil || len(listed) != 1 || listed[0].Key != k {
			t.Fatalf("list %s in %s = %v, %v", k.Kind, k.Group, listed, err)
		}
	}
	rule, err := s.Get(ctx, registry.Key{Kind: registry.KindIndexRule, Group: "mw", Name: "service"})
	if err != nil {
		t.Fatal(err)
	}
	if id := registry.Metadata(rule.Message).GetId(); id == 0 {
		t.Fatalf("index rule stored without an id")
	}

	// Each kind lives only in a group of its catalog.
	for _, tc := range []struct {
		m    proto.Message
		what string
	}{
		{NewTrace("mw", "segment"), "trace in measure group"},
		{NewProperty("tw", "p"), "property in trace group"},
		{NewTopNAggregation("tw", "top", "cpu"), "topn in trace group"},
		{NewIndexRule("pw", "r", "name"), "index rule in property group"},
		{NewIndexRule("nope", "r", "name"), "index rule in missing group"},
	} {
		_, err := s.Create(ctx, tc.m)
		wantErr(t, err, registry.ErrFailedPrecondition, tc.what)
	}

	// A trace keeps its id, span id and timestamp tags.
	tr := NewTrace("tw", "segment")
	tr.Tags = tr.Tags[1:]
	_, err = s.Update(ctx, tr)
	if !errors.As(err, new(*registry.InvalidArgumentError)) {
		t.Fatalf("update dropping the trace id tag: %v, want InvalidArgumentError", err)
	}

	for _, m := range objs {
		k, _ := registry.KeyOf(m)
		if _, err := s.Delete(ctx, k); err != nil {
			t.Fatalf("delete %s: %v", k, err)
		}
		_, err := s.Get(ctx, k)
		wantErr(t, err, registry.ErrNotFound, "get deleted "+k.String())
		_, err = s.Delete(ctx, k)
		wantErr(t, err, registry.ErrNotFound, "delete deleted "+k.String())
	}
}

// testMemberDependencies: a binding needs its rules and subject, and its
// rules' tags in the subject; a TopN aggregation needs its measure, field
// and tags. A refused write stores nothing.
func testMemberDependencies(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	mustCreate(t, s, NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE))
	mustCreate(t, s, NewGroup("sw", commonv1.Catalog_CATALOG_STREAM))
	mustCreate(t, s, NewMeasure("mw", "cpu"))
	mustCreate(t, s, NewStream("sw", "logs"))
	mustCreate(t, s, NewIndexRule("mw", "service", "service"))
	mustCreate(t, s, NewIndexRule("mw", "trace_id", "trace_id"))
	mustCreate(t, s, NewIndexRule("sw", "trace_id", "trace_id"))

	var ia *registry.InvalidArgumentError
	for _, tc := range []struct {
		m     proto.Message
		want  error
		field string
		what  string
	}{
		{NewIndexRuleBinding("mw", "b", commonv1.Catalog_CATALOG_MEASURE, "cpu", "service", "nope"), registry.ErrDependencyNotFound, "", "binding to a missing rule"},
		{NewIndexRuleBinding("mw", "b", commonv1.Catalog_CATALOG_MEASURE, "nope", "service"), registry.ErrDependencyNotFound, "", "binding to a missing subject"},
		{NewIndexRuleBinding("mw", "b", commonv1.Catalog_CATALOG_MEASURE, "cpu", "trace_id"), registry.ErrInvalidArgument, "index_rule_binding.rules[0]", "rule on a tag the subject lacks"},
		{NewIndexRuleBinding("mw", "b", commonv1.Catalog_CATALOG_STREAM, "logs", "service"), registry.ErrInvalidArgument, "index_rule_binding.subject.catalog", "subject of another catalog"},
		{NewTopNAggregation("mw", "top", "nope"), registry.ErrDependencyNotFound, "", "topn on a missing measure"},
		{func() proto.Message { a := NewTopNAggregation("mw", "top", "cpu"); a.FieldName = "nope"; return a }(), registry.ErrInvalidArgument, "top_n_aggregation.field_name", "topn on a missing field"},
		{func() proto.Message {
			a := NewTopNAggregation("mw", "top", "cpu")
			a.GroupByTagNames = []string{"nope"}
			return a
		}(), registry.ErrInvalidArgument, "top_n_aggregation.group_by_tag_names[0]", "topn grouped by a missing tag"},
	} {
		_, err := s.Create(ctx, tc.m)
		wantErr(t, err, tc.want, tc.what)
		if tc.field != "" && (!errors.As(err, &ia) || ia.Field != tc.field) {
			t.Fatalf("%s: %v, want InvalidArgumentError on %s", tc.what, err, tc.field)
		}
		k, _ := registry.KeyOf(tc.m)
		_, err = s.Get(ctx, k)
		wantErr(t, err, registry.ErrNotFound, tc.what+": refused write must store nothing")
	}
	mustCreate(t, s, NewIndexRuleBinding("sw", "logs", commonv1.Catalog_CATALOG_STREAM, "logs", "trace_id"))
}

// testGroupDeleteEveryKind: a forced group delete takes every kind of
// member with it and reports each; without force it names them.
func testGroupDeleteEveryKind(t *testing.T, s registry.SchemaStore) {
	ctx := ctxT(t)
	mustCreate(t, s, NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE))
	mustCreate(t, s, NewMeasure("mw", "cpu"))
	mustCreate(t, s, NewIndexRule("mw", "service", "service"))
	mustCreate(t, s, NewIndexRuleBinding("mw", "cpu", commonv1.Catalog_CATALOG_MEASURE, "cpu", "service"))
	mustCreate(t, s, NewTopNAggregation("mw", "top_cpu", "cpu"))
	mustCreate(t, s, NewGroup("tw", commonv1.Catalog_CATALOG_TRACE))
	mustCreate(t, s, NewTrace("tw", "segment"))
	mustCreate(t, s, NewGroup("pw", commonv1.Catalog_CATALOG_PROPERTY))
	mustCreate(t, s, NewProperty("pw", "ui_template"))

	_, err := s.DeleteGroup(ctx, "mw", registry.DeleteGroupOptions{})
	wantErr(t, err, registry.ErrFailedPrecondition, "non-empty group without force")
	for _, name := range []string{"cpu", "service", "top_cpu"} {
		if !strings.Contains(err.Error(), name) {
			t.Fatalf("refusal %q does not name %q", err, name)
		}
	}
	info, err := s.DeleteGroup(ctx, "mw", registry.DeleteGroupOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(info.GetMeasures(), info.GetIndexRules(), info.GetIndexRuleBindings(), info.GetTopnAggregations()); got != "[cpu] [service] [cpu] [top_cpu]" {
		t.Fatalf("force delete info = %v", info)
	}
	for _, g := range []string{"tw", "pw"} {
		if _, err := s.DeleteGroup(ctx, g, registry.DeleteGroupOptions{Force: true}); err != nil {
			t.Fatalf("delete %s: %v", g, err)
		}
	}
	if got := StoreState(t, s); len(got) != 0 {
		t.Fatalf("left over after deleting every group: %v", got)
	}
}
