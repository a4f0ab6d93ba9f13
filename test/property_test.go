package test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	"github.com/banyand-io/banyand/internal/poll"
)

const (
	propGroup = "props"
	propName  = "settings"
)

// createPropertySchema makes a property group of shards and replicas
// with the schema propName: a string, an int and a string array tag.
func createPropertySchema(t *testing.T, conn *grpc.ClientConn, shards, replicas uint32) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata:     &commonv1.Metadata{Name: propGroup},
		Catalog:      commonv1.Catalog_CATALOG_PROPERTY,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards, Replicas: replicas},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	if _, err := databasev1.NewPropertyRegistryServiceClient(conn).Create(ctx, &databasev1.PropertyRegistryServiceCreateRequest{Property: &databasev1.Property{
		Metadata: &commonv1.Metadata{Group: propGroup, Name: propName},
		Tags: []*databasev1.TagSpec{
			{Name: "owner", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "level", Type: databasev1.TagType_TAG_TYPE_INT},
			{Name: "labels", Type: databasev1.TagType_TAG_TYPE_STRING_ARRAY},
		},
	}}); err != nil {
		t.Fatalf("create property schema: %v", err)
	}
}

func propStr(k, v string) *modelv1.Tag {
	return &modelv1.Tag{Key: k, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: v}}}}
}

func propInt(k string, v int64) *modelv1.Tag {
	return &modelv1.Tag{Key: k, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: v}}}}
}

func newProperty(group, name, id string, tags ...*modelv1.Tag) *propertyv1.Property {
	return &propertyv1.Property{Metadata: &commonv1.Metadata{Group: group, Name: name}, Id: id, Tags: tags}
}

// tagsOf renders a property's tags as key=value in the order read.
func tagsOf(p *propertyv1.Property) []string {
	var out []string
	for _, t := range p.GetTags() {
		v := t.GetValue()
		switch {
		case v.GetStr() != nil:
			out = append(out, t.GetKey()+"="+v.GetStr().GetValue())
		case v.GetInt() != nil:
			out = append(out, fmt.Sprintf("%s=%d", t.GetKey(), v.GetInt().GetValue()))
		default:
			out = append(out, t.GetKey()+"="+v.String())
		}
	}
	return out
}

func queryIDs(t *testing.T, c propertyv1.PropertyServiceClient, req *propertyv1.QueryRequest) map[string]*propertyv1.Property {
	t.Helper()
	resp, err := c.Query(ctxT(t), req)
	if err != nil {
		t.Fatalf("query %v: %v", req, err)
	}
	out := map[string]*propertyv1.Property{}
	for _, p := range resp.GetProperties() {
		out[p.GetId()] = p
	}
	return out
}

func TestProperties(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		createPropertySchema(t, conn, 2, 0)
		checkProperties(t, conn)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		createPropertySchema(t, c.liaisons[0], 2, 0)
		checkProperties(t, c.liaisons[0])
	})
}

// checkProperties applies, merges, replaces, orders and deletes
// properties, and sends every kind of bad input: each gets a clear
// status and leaves nothing behind.
func checkProperties(t *testing.T, conn *grpc.ClientConn) {
	ctx := ctxT(t)
	c := propertyv1.NewPropertyServiceClient(conn)
	apply := func(p *propertyv1.Property, s propertyv1.ApplyRequest_Strategy) *propertyv1.ApplyResponse {
		t.Helper()
		resp, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: p, Strategy: s})
		if err != nil {
			t.Fatalf("apply %v: %v", p, err)
		}
		return resp
	}
	merge, replace := propertyv1.ApplyRequest_STRATEGY_UNSPECIFIED, propertyv1.ApplyRequest_STRATEGY_REPLACE

	if r := apply(newProperty(propGroup, propName, "a", propStr("owner", "ann"), propInt("level", 1)), merge); !r.GetCreated() || r.GetTagsNum() != 2 {
		t.Fatalf("first apply answered %v, want created with 2 tags", r)
	}
	if r := apply(newProperty(propGroup, propName, "a", propInt("level", 2)), propertyv1.ApplyRequest_STRATEGY_MERGE); r.GetCreated() || r.GetTagsNum() != 2 {
		t.Fatalf("merge answered %v, want not created, 2 tags", r)
	}
	apply(newProperty(propGroup, propName, "b", propStr("owner", "bob"), propInt("level", 5)), merge)
	if r := apply(newProperty(propGroup, propName, "b", propInt("level", 3)), replace); r.GetCreated() || r.GetTagsNum() != 1 {
		t.Fatalf("replace answered %v, want not created, 1 tag", r)
	}
	apply(newProperty(propGroup, propName, "c", propStr("owner", "cid"), propInt("level", 9)), merge)

	got := queryIDs(t, c, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName})
	if len(got) != 3 {
		t.Fatalf("read %d properties, want 3: %v", len(got), got)
	}
	if a := tagsOf(got["a"]); !slices.Equal(a, []string{"level=2", "owner=ann"}) {
		t.Errorf("merged a reads %v", a)
	}
	if b := tagsOf(got["b"]); !slices.Equal(b, []string{"level=3"}) {
		t.Errorf("replaced b reads %v", b)
	}
	a := got["a"]
	if md := a.GetMetadata(); md.GetModRevision() <= md.GetCreateRevision() || md.GetCreateRevision() == 0 || a.GetUpdatedAt() == nil ||
		md.GetGroup() != propGroup || md.GetName() != propName {
		t.Errorf("a's metadata %v updated_at %v: want revisions (mod above create), group, name and a time", md, a.GetUpdatedAt())
	}

	// Criteria, order, limit and projection.
	ge2 := &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
		Name: "level", Op: modelv1.Condition_BINARY_OP_GE, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: 3}}},
	}}}
	resp, err := c.Query(ctx, &propertyv1.QueryRequest{
		Groups: []string{propGroup}, Name: propName, Criteria: ge2, TagProjection: []string{"level"},
		OrderBy: &propertyv1.QueryOrder{TagName: "level", Sort: modelv1.Sort_SORT_DESC}, Limit: math.MaxInt32,
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range resp.GetProperties() {
		order = append(order, p.GetId()+":"+fmt.Sprint(tagsOf(p)))
	}
	if want := []string{"c:[level=9]", "b:[level=3]"}; !slices.Equal(order, want) {
		t.Errorf("level >= 3 by level desc, projected on level: %v, want %v", order, want)
	}
	if n := len(queryIDs(t, c, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName, Limit: 2})); n != 2 {
		t.Errorf("limit 2 read %d", n)
	}

	// Bad input: a clear status each, and nothing stored.
	createStreamSchema(t, conn, 1)
	wrongType := newProperty(propGroup, propName, "x", propStr("level", "high"))
	for _, tc := range []struct {
		what string
		call func() error
		want codes.Code
	}{
		{"no id", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty(propGroup, propName, "", propInt("level", 1))})
			return err
		}, codes.InvalidArgument},
		{"no tags", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty(propGroup, propName, "x")})
			return err
		}, codes.InvalidArgument},
		{"unknown group", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty("nope", propName, "x", propInt("level", 1))})
			return err
		}, codes.NotFound},
		{"unknown property schema", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty(propGroup, "nope", "x", propInt("level", 1))})
			return err
		}, codes.NotFound},
		{"wrong tag type", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: wrongType})
			return err
		}, codes.InvalidArgument},
		{"undeclared tag", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty(propGroup, propName, "x", propInt("color", 1))})
			return err
		}, codes.InvalidArgument},
		{"query with an unknown tag", func() error {
			_, err := c.Query(ctx, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName, Criteria: &modelv1.Criteria{
				Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: "color", Op: modelv1.Condition_BINARY_OP_EQ,
					Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: 1}}}}},
			}})
			return err
		}, codes.InvalidArgument},
		{"query without groups", func() error {
			_, err := c.Query(ctx, &propertyv1.QueryRequest{Name: propName})
			return err
		}, codes.InvalidArgument},
		{"delete without name", func() error {
			_, err := c.Delete(ctx, &propertyv1.DeleteRequest{Group: propGroup})
			return err
		}, codes.InvalidArgument},
		{"no property", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{})
			return err
		}, codes.InvalidArgument},
		{"a strategy that does not exist", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty(propGroup, propName, "x", propInt("level", 1)), Strategy: 7})
			return err
		}, codes.InvalidArgument},
		{"apply to a stream group", func() error {
			_, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty(streamGroup, propName, "x", propInt("level", 1))})
			return err
		}, codes.FailedPrecondition},
		{"query of a stream group", func() error {
			_, err := c.Query(ctx, &propertyv1.QueryRequest{Groups: []string{streamGroup}, Name: propName})
			return err
		}, codes.FailedPrecondition},
		{"query of a missing property schema", func() error {
			_, err := c.Query(ctx, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: "nope"})
			return err
		}, codes.NotFound},
		{"order by an unknown tag", func() error {
			_, err := c.Query(ctx, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName, OrderBy: &propertyv1.QueryOrder{TagName: "color"}})
			return err
		}, codes.InvalidArgument},
		{"criteria nested too deep", func() error {
			_, err := c.Query(ctx, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName, Criteria: nested(100)})
			return err
		}, codes.InvalidArgument},
		{"delete in an unknown group", func() error {
			_, err := c.Delete(ctx, &propertyv1.DeleteRequest{Group: "nope", Name: propName, Id: "a"})
			return err
		}, codes.NotFound},
	} {
		if err := tc.call(); status.Code(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.what, err, tc.want)
		}
	}
	if got := queryIDs(t, c, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName}); len(got) != 3 || got["x"] != nil {
		t.Errorf("after the bad input %d properties are stored, want the 3 applied", len(got))
	}

	// Delete one, a missing one, then the rest of the name at once.
	del := func(id string) bool {
		t.Helper()
		r, err := c.Delete(ctx, &propertyv1.DeleteRequest{Group: propGroup, Name: propName, Id: id})
		if err != nil {
			t.Fatalf("delete %q: %v", id, err)
		}
		return r.GetDeleted()
	}
	if !del("a") || del("a") || del("missing") {
		t.Error("delete a, again, and a missing one: want true, false, false")
	}
	if got := queryIDs(t, c, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName}); len(got) != 2 || got["a"] != nil {
		t.Errorf("after deleting a: %v", got)
	}
	if r := apply(newProperty(propGroup, propName, "a", propInt("level", 7)), merge); !r.GetCreated() || r.GetTagsNum() != 1 {
		t.Errorf("re-apply after delete answered %v, want created afresh with 1 tag (nothing merged from before)", r)
	}
	if !del("") {
		t.Error("delete of the whole name answered not deleted")
	}
	if got := queryIDs(t, c, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName}); len(got) != 0 {
		t.Errorf("after deleting the name: %v", got)
	}
}

// checkOAPProperties replays SkyWalking OAP 10.4's UI template management
// (BanyanDBUITemplateManagementDAO through BanyanDBStorageClient): at boot
// getTemplate (query by name and id) then addTemplate (apply, merge) for
// each template; the UI lists them (limit Integer.MAX_VALUE), changes one
// (a partial apply), disables one; a template is deleted.
func checkOAPProperties(t *testing.T, conn *grpc.ClientConn) {
	ctx := ctxT(t)
	c := propertyv1.NewPropertyServiceClient(conn)
	const name = "ui_template"
	get := func(id string) *propertyv1.Property {
		t.Helper()
		resp, err := c.Query(ctx, &propertyv1.QueryRequest{Groups: []string{oapProperty}, Name: name, Ids: []string{id}})
		if err != nil {
			t.Fatalf("getTemplate %s: %v", id, err)
		}
		if len(resp.GetProperties()) == 0 {
			return nil
		}
		return resp.GetProperties()[0]
	}
	list := func() map[string]*propertyv1.Property {
		t.Helper()
		return queryIDs(t, c, &propertyv1.QueryRequest{Groups: []string{oapProperty}, Name: name, Limit: math.MaxInt32})
	}
	template := func(id, conf string, disabled, updated int64) *propertyv1.Property {
		return newProperty(oapProperty, name, id, propStr("configuration", conf), propInt("disabled", disabled), propInt("update_time", updated))
	}
	ids := []string{"general-service", "mesh-service", "k8s-cluster"}
	for i, id := range ids {
		if get(id) != nil {
			t.Fatalf("template %s exists before it was added", id)
		}
		resp, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: template(id, `{"id":"`+id+`"}`, 0, int64(1000+i)), Strategy: propertyv1.ApplyRequest_STRATEGY_MERGE})
		if err != nil || !resp.GetCreated() || resp.GetTagsNum() != 3 {
			t.Fatalf("addTemplate %s: %v, %v", id, resp, err)
		}
	}
	all := list()
	if len(all) != len(ids) {
		t.Fatalf("getAllTemplates read %d, want %d", len(all), len(ids))
	}
	for _, id := range ids {
		if got, want := tagsOf(all[id]), []string{`configuration={"id":"` + id + `"}`, "disabled=0"}; !slices.Equal(got[:2], want) {
			t.Errorf("template %s reads %v", id, got)
		}
	}
	// changeTemplate: configuration and update_time only; disabled kept.
	changed := newProperty(oapProperty, name, "mesh-service", propStr("configuration", `{"v":2}`), propInt("update_time", 2000))
	if resp, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: changed, Strategy: propertyv1.ApplyRequest_STRATEGY_MERGE}); err != nil || resp.GetCreated() || resp.GetTagsNum() != 3 {
		t.Fatalf("changeTemplate: %v, %v", resp, err)
	}
	// disableTemplate: disabled and update_time only.
	disabled := newProperty(oapProperty, name, "k8s-cluster", propInt("disabled", 1), propInt("update_time", 3000))
	if _, err := c.Apply(ctx, &propertyv1.ApplyRequest{Property: disabled, Strategy: propertyv1.ApplyRequest_STRATEGY_MERGE}); err != nil {
		t.Fatalf("disableTemplate: %v", err)
	}
	if got := tagsOf(get("mesh-service")); !slices.Equal(got, []string{`configuration={"v":2}`, "update_time=2000", "disabled=0"}) {
		t.Errorf("changed template reads %v", got)
	}
	if got := tagsOf(get("k8s-cluster")); !slices.Equal(got, []string{"disabled=1", "update_time=3000", `configuration={"id":"k8s-cluster"}`}) {
		t.Errorf("disabled template reads %v", got)
	}
	resp, err := c.Delete(ctx, &propertyv1.DeleteRequest{Group: oapProperty, Name: name, Id: "general-service"})
	if err != nil || !resp.GetDeleted() {
		t.Fatalf("deleteProperty: %v, %v", resp, err)
	}
	if get("general-service") != nil || len(list()) != 2 {
		t.Error("a deleted template is still read")
	}
}

// With replicas = 1 every property is on two of three data nodes: with
// one stopped all read back as last applied, deleted ones stay deleted,
// and Apply and Delete still work.
func TestClusterPropertiesReadableWhenANodeStops(t *testing.T) {
	c := startCluster(t, 3, 1)
	conn := c.liaisons[0]
	createPropertySchema(t, conn, 4, 1)
	pc := propertyv1.NewPropertyServiceClient(conn)
	ctx := ctxT(t)
	const n = 30
	for i := range n {
		p := newProperty(propGroup, propName, fmt.Sprintf("p%02d", i), propStr("owner", "first"), propInt("level", int64(i)))
		if _, err := pc.Apply(ctx, &propertyv1.ApplyRequest{Property: p}); err != nil {
			t.Fatal(err)
		}
		p = newProperty(propGroup, propName, fmt.Sprintf("p%02d", i), propStr("owner", "second"))
		if _, err := pc.Apply(ctx, &propertyv1.ApplyRequest{Property: p}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := pc.Delete(ctx, &propertyv1.DeleteRequest{Group: propGroup, Name: propName, Id: "p00"}); err != nil || !r.GetDeleted() {
		t.Fatalf("delete p00: %v, %v", r, err)
	}
	want := func(got map[string]*propertyv1.Property) error {
		if len(got) != n-1 || got["p00"] != nil {
			return fmt.Errorf("read %d properties (p00 deleted: %v), want %d", len(got), got["p00"] == nil, n-1)
		}
		for i := 1; i < n; i++ {
			id := fmt.Sprintf("p%02d", i)
			if tags := tagsOf(got[id]); !slices.Equal(tags, []string{"owner=second", fmt.Sprintf("level=%d", i)}) {
				return fmt.Errorf("%s reads %v", id, tags)
			}
		}
		return nil
	}
	if err := want(queryIDs(t, pc, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName, Limit: math.MaxInt32})); err != nil {
		t.Fatal(err)
	}
	c.data[0].stop(t)
	var last error
	poll.Within(t, 20*time.Second, "every property readable with one of three nodes stopped", func() bool {
		resp, err := pc.Query(ctx, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName, Limit: math.MaxInt32})
		if err != nil {
			last = err
			return false
		}
		got := map[string]*propertyv1.Property{}
		for _, p := range resp.GetProperties() {
			got[p.GetId()] = proto.CloneOf(p)
		}
		last = want(got)
		return last == nil
	})
	if last != nil {
		t.Fatal(last)
	}
	p := newProperty(propGroup, propName, "p01", propInt("level", 100))
	if r, err := pc.Apply(ctx, &propertyv1.ApplyRequest{Property: p}); err != nil || r.GetCreated() {
		t.Fatalf("apply with a node stopped: %v, %v", r, err)
	}
	if got := tagsOf(queryIDs(t, pc, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName, Ids: []string{"p01"}})["p01"]); !slices.Equal(got, []string{"level=100", "owner=second"}) {
		t.Fatalf("p01 after an apply with a node stopped reads %v", got)
	}
}

// Without replicas, a property query with a data node away fails
// UNAVAILABLE naming it (the stream and measure rule), and a node that
// comes back reads every property again, as last applied.
func TestClusterPropertyQueryIsCompleteOrLoud(t *testing.T) {
	c := startCluster(t, 2, 1)
	conn := c.liaisons[0]
	createPropertySchema(t, conn, 2, 0) // a shard a node
	pc := propertyv1.NewPropertyServiceClient(conn)
	ctx := ctxT(t)
	const n = 20
	for i := range n {
		if _, err := pc.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty(propGroup, propName, fmt.Sprintf("p%02d", i), propInt("level", int64(i)))}); err != nil {
			t.Fatal(err)
		}
	}
	query := func() (int, error) {
		resp, err := pc.Query(ctx, &propertyv1.QueryRequest{Groups: []string{propGroup}, Name: propName, Limit: math.MaxInt32})
		return len(resp.GetProperties()), err
	}
	c.data[1].stop(t)
	poll.Within(t, 20*time.Second, "a property query without data-1 fails UNAVAILABLE naming it", func() bool {
		got, err := query()
		if err == nil {
			if got < n {
				t.Fatalf("query answered OK with %d of %d properties", got, n)
			}
			return false
		}
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("query with data-1 away: %v, want UNAVAILABLE", err)
		}
		return strings.Contains(err.Error(), "data-1")
	})
	// An Apply reads the property first: with a holder of the group away
	// it fails loud too, rather than merging into nothing.
	_, err := pc.Apply(ctx, &propertyv1.ApplyRequest{Property: newProperty(propGroup, propName, "p01", propInt("level", 100))})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("apply with data-1 away: %v, want UNAVAILABLE", err)
	}
	c.data[1] = c.startDataNode(1)
	poll.Within(t, 20*time.Second, "every property read once data-1 is back", func() bool {
		got, err := query()
		return err == nil && got == n
	})
}
