package metadata

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/pkg/registry/local"
	"github.com/banyand-io/banyand/pkg/registry/registrytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type clients struct {
	group     databasev1.GroupRegistryServiceClient
	stream    databasev1.StreamRegistryServiceClient
	measure   databasev1.MeasureRegistryServiceClient
	indexRule databasev1.IndexRuleRegistryServiceClient
	binding   databasev1.IndexRuleBindingRegistryServiceClient
	topN      databasev1.TopNAggregationRegistryServiceClient
	trace     databasev1.TraceRegistryServiceClient
	property  databasev1.PropertyRegistryServiceClient
}

// serve runs the services over a fresh local store on 127.0.0.1:0.
func serve(t *testing.T) clients {
	t.Helper()
	store, err := local.Open(local.Config{Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	New(store).Register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
		_ = store.Close()
	})
	return clients{
		group:     databasev1.NewGroupRegistryServiceClient(conn),
		stream:    databasev1.NewStreamRegistryServiceClient(conn),
		measure:   databasev1.NewMeasureRegistryServiceClient(conn),
		indexRule: databasev1.NewIndexRuleRegistryServiceClient(conn),
		binding:   databasev1.NewIndexRuleBindingRegistryServiceClient(conn),
		topN:      databasev1.NewTopNAggregationRegistryServiceClient(conn),
		trace:     databasev1.NewTraceRegistryServiceClient(conn),
		property:  databasev1.NewPropertyRegistryServiceClient(conn),
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, err error, code codes.Code, what string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: got %v, want code %s", what, err, code)
	}
}

func TestGroupService(t *testing.T) {
	c, ctx := serve(t), testCtx(t)
	g := registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM)
	if _, err := c.group.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: g}); err != nil {
		t.Fatal(err)
	}
	_, err := c.group.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: g})
	wantCode(t, err, codes.AlreadyExists, "duplicate group")
	_, err = c.group.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{})
	wantCode(t, err, codes.InvalidArgument, "missing group")

	got, err := c.group.Get(ctx, &databasev1.GroupRegistryServiceGetRequest{Group: "sw"})
	if err != nil {
		t.Fatal(err)
	}
	if md := got.GetGroup().GetMetadata(); md.GetModRevision() == 0 || md.GetCreateRevision() != md.GetModRevision() {
		t.Fatalf("group metadata %v: revisions not stamped", md)
	}
	_, err = c.group.Get(ctx, &databasev1.GroupRegistryServiceGetRequest{Group: "nope"})
	wantCode(t, err, codes.NotFound, "get missing group")

	g.ResourceOpts.ShardNum = 4
	if _, err := c.group.Update(ctx, &databasev1.GroupRegistryServiceUpdateRequest{Group: g}); err != nil {
		t.Fatal(err)
	}
	_, err = c.group.Update(ctx, &databasev1.GroupRegistryServiceUpdateRequest{Group: registrytest.NewGroup("nope", commonv1.Catalog_CATALOG_STREAM)})
	wantCode(t, err, codes.NotFound, "update missing group")

	list, err := c.group.List(ctx, &databasev1.GroupRegistryServiceListRequest{})
	if err != nil || len(list.GetGroup()) != 1 || list.GetGroup()[0].GetResourceOpts().GetShardNum() != 4 {
		t.Fatalf("list = %v, %v", list, err)
	}
	ex, err := c.group.Exist(ctx, &databasev1.GroupRegistryServiceExistRequest{Group: "sw"})
	if err != nil || !ex.GetHasGroup() {
		t.Fatalf("exist sw = %v, %v", ex, err)
	}
	ex, err = c.group.Exist(ctx, &databasev1.GroupRegistryServiceExistRequest{Group: "nope"})
	if err != nil || ex.GetHasGroup() {
		t.Fatalf("exist nope = %v, %v", ex, err)
	}

	for _, cat := range []commonv1.Catalog{commonv1.Catalog_CATALOG_PROPERTY, commonv1.Catalog_CATALOG_TRACE} {
		if _, err := c.group.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: registrytest.NewGroup("g"+cat.String(), cat)}); err != nil {
			t.Fatalf("%s group: %v", cat, err)
		}
	}
}

func TestGroupDeleteSemantics(t *testing.T) {
	c, ctx := serve(t), testCtx(t)
	if _, err := c.group.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.stream.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: registrytest.NewStream("sw", "logs")}); err != nil {
		t.Fatal(err)
	}
	dry, err := c.group.Delete(ctx, &databasev1.GroupRegistryServiceDeleteRequest{Group: "sw", DryRun: true})
	if err != nil || len(dry.GetSchemaInfo().GetStreams()) != 1 || dry.GetSchemaInfo().GetStreams()[0] != "logs" {
		t.Fatalf("dry run = %v, %v", dry, err)
	}
	_, err = c.group.Delete(ctx, &databasev1.GroupRegistryServiceDeleteRequest{Group: "sw"})
	wantCode(t, err, codes.FailedPrecondition, "delete non-empty group")
	if !strings.Contains(status.Convert(err).Message(), "logs") {
		t.Fatalf("refusal %q does not name the stream", status.Convert(err).Message())
	}
	_, err = c.group.Delete(ctx, &databasev1.GroupRegistryServiceDeleteRequest{Group: "sw", DataOnly: true})
	wantCode(t, err, codes.Unimplemented, "data_only")
	_, err = c.group.Delete(ctx, &databasev1.GroupRegistryServiceDeleteRequest{Group: "nope"})
	wantCode(t, err, codes.NotFound, "delete missing group")

	res, err := c.group.Delete(ctx, &databasev1.GroupRegistryServiceDeleteRequest{Group: "sw", Force: true})
	if err != nil || len(res.GetSchemaInfo().GetStreams()) != 1 {
		t.Fatalf("force delete = %v, %v", res, err)
	}
	_, err = c.stream.Get(ctx, &databasev1.StreamRegistryServiceGetRequest{Metadata: &commonv1.Metadata{Group: "sw", Name: "logs"}})
	wantCode(t, err, codes.NotFound, "stream after force delete")
}

func TestStreamService(t *testing.T) {
	c, ctx := serve(t), testCtx(t)
	md := &commonv1.Metadata{Group: "sw", Name: "logs"}

	_, err := c.stream.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: registrytest.NewStream("sw", "logs")})
	wantCode(t, err, codes.FailedPrecondition, "stream in missing group")
	ex, err := c.stream.Exist(ctx, &databasev1.StreamRegistryServiceExistRequest{Metadata: md})
	if err != nil || ex.GetHasGroup() || ex.GetHasStream() {
		t.Fatalf("exist without group = %v, %v", ex, err)
	}

	for _, g := range []*commonv1.Group{
		registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM),
		registrytest.NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE),
	} {
		if _, err := c.group.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: g}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.stream.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: registrytest.NewStream("mw", "logs")})
	wantCode(t, err, codes.FailedPrecondition, "stream in measure group")

	ex, err = c.stream.Exist(ctx, &databasev1.StreamRegistryServiceExistRequest{Metadata: md})
	if err != nil || !ex.GetHasGroup() || ex.GetHasStream() {
		t.Fatalf("exist missing stream in existing group = %v, %v; want has_group only", ex, err)
	}

	// Invalid schema: InvalidArgument naming the field, and nothing stored.
	bad := registrytest.NewStream("sw", "logs")
	bad.Entity.TagNames = []string{"service", "nope"}
	_, err = c.stream.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: bad})
	wantCode(t, err, codes.InvalidArgument, "bad entity")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "stream.entity.tag_names[1]") {
		t.Fatalf("message %q does not name the field", msg)
	}
	_, err = c.stream.Get(ctx, &databasev1.StreamRegistryServiceGetRequest{Metadata: md})
	wantCode(t, err, codes.NotFound, "invalid stream stored")

	created, err := c.stream.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: registrytest.NewStream("sw", "logs")})
	if err != nil || created.GetModRevision() == 0 {
		t.Fatalf("create = %v, %v", created, err)
	}
	_, err = c.stream.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: registrytest.NewStream("sw", "logs")})
	wantCode(t, err, codes.AlreadyExists, "duplicate stream")
	got, err := c.stream.Get(ctx, &databasev1.StreamRegistryServiceGetRequest{Metadata: md})
	if err != nil || got.GetStream().GetMetadata().GetModRevision() != created.GetModRevision() {
		t.Fatalf("get = %v, %v", got, err)
	}
	upd, err := c.stream.Update(ctx, &databasev1.StreamRegistryServiceUpdateRequest{Stream: registrytest.NewStream("sw", "logs")})
	if err != nil || upd.GetModRevision() <= created.GetModRevision() {
		t.Fatalf("update = %v, %v", upd, err)
	}
	_, err = c.stream.Update(ctx, &databasev1.StreamRegistryServiceUpdateRequest{Stream: registrytest.NewStream("sw", "nope")})
	wantCode(t, err, codes.NotFound, "update missing stream")
	list, err := c.stream.List(ctx, &databasev1.StreamRegistryServiceListRequest{Group: "sw"})
	if err != nil || len(list.GetStream()) != 1 {
		t.Fatalf("list = %v, %v", list, err)
	}
	_, err = c.stream.List(ctx, &databasev1.StreamRegistryServiceListRequest{Group: "nope"})
	wantCode(t, err, codes.NotFound, "list missing group")
	_, err = c.stream.Get(ctx, &databasev1.StreamRegistryServiceGetRequest{})
	wantCode(t, err, codes.InvalidArgument, "get without metadata")

	del, err := c.stream.Delete(ctx, &databasev1.StreamRegistryServiceDeleteRequest{Metadata: md})
	if err != nil || !del.GetDeleted() {
		t.Fatalf("delete = %v, %v", del, err)
	}
	_, err = c.stream.Delete(ctx, &databasev1.StreamRegistryServiceDeleteRequest{Metadata: md})
	wantCode(t, err, codes.NotFound, "delete missing stream")
}

func TestMeasureService(t *testing.T) {
	c, ctx := serve(t), testCtx(t)
	md := &commonv1.Metadata{Group: "mw", Name: "cpu"}
	_, err := c.measure.Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: registrytest.NewMeasure("mw", "cpu")})
	wantCode(t, err, codes.FailedPrecondition, "measure in missing group")
	if _, err := c.group.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: registrytest.NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE)}); err != nil {
		t.Fatal(err)
	}
	ex, err := c.measure.Exist(ctx, &databasev1.MeasureRegistryServiceExistRequest{Metadata: md})
	if err != nil || !ex.GetHasGroup() || ex.GetHasMeasure() {
		t.Fatalf("exist = %v, %v", ex, err)
	}

	bad := registrytest.NewMeasure("mw", "cpu")
	bad.Fields[0].FieldType = databasev1.FieldType_FIELD_TYPE_UNSPECIFIED
	_, err = c.measure.Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: bad})
	wantCode(t, err, codes.InvalidArgument, "bad field type")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "measure.fields[0].field_type") {
		t.Fatalf("message %q does not name the field", msg)
	}
	_, err = c.measure.Get(ctx, &databasev1.MeasureRegistryServiceGetRequest{Metadata: md})
	wantCode(t, err, codes.NotFound, "invalid measure stored")

	if _, err := c.measure.Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: registrytest.NewMeasure("mw", "cpu")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.measure.Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: registrytest.NewMeasure("mw", "cpu")})
	wantCode(t, err, codes.AlreadyExists, "duplicate measure")
	ex, err = c.measure.Exist(ctx, &databasev1.MeasureRegistryServiceExistRequest{Metadata: md})
	if err != nil || !ex.GetHasGroup() || !ex.GetHasMeasure() {
		t.Fatalf("exist = %v, %v", ex, err)
	}
	list, err := c.measure.List(ctx, &databasev1.MeasureRegistryServiceListRequest{Group: "mw"})
	if err != nil || len(list.GetMeasure()) != 1 {
		t.Fatalf("list = %v, %v", list, err)
	}
	if _, err := c.measure.Update(ctx, &databasev1.MeasureRegistryServiceUpdateRequest{Measure: registrytest.NewMeasure("mw", "cpu")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.measure.Delete(ctx, &databasev1.MeasureRegistryServiceDeleteRequest{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	_, err = c.measure.Get(ctx, &databasev1.MeasureRegistryServiceGetRequest{Metadata: md})
	wantCode(t, err, codes.NotFound, "get deleted measure")
}

// TestIndexAndModelServices drives the index rule, binding, TopN, trace
// and property services the way OAP installs its schema: Exist, Create,
// Get, then the refusals a bad request gets.
func TestIndexAndModelServices(t *testing.T) {
	c, ctx := serve(t), testCtx(t)
	for _, g := range []*commonv1.Group{
		registrytest.NewGroup("mw", commonv1.Catalog_CATALOG_MEASURE),
		registrytest.NewGroup("tw", commonv1.Catalog_CATALOG_TRACE),
		registrytest.NewGroup("pw", commonv1.Catalog_CATALOG_PROPERTY),
	} {
		if _, err := c.group.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: g}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.measure.Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: registrytest.NewMeasure("mw", "cpu")}); err != nil {
		t.Fatal(err)
	}
	rule := &commonv1.Metadata{Group: "mw", Name: "service"}
	ex, err := c.indexRule.Exist(ctx, &databasev1.IndexRuleRegistryServiceExistRequest{Metadata: rule})
	if err != nil || !ex.GetHasGroup() || ex.GetHasIndexRule() {
		t.Fatalf("rule exist before create = %v, %v", ex, err)
	}
	_, err = c.indexRule.Get(ctx, &databasev1.IndexRuleRegistryServiceGetRequest{Metadata: rule})
	wantCode(t, err, codes.NotFound, "get missing rule") // OAP's findIndexRule reads NOT_FOUND as "absent"
	if _, err := c.indexRule.Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: registrytest.NewIndexRule("mw", "service", "service")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.indexRule.Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: registrytest.NewIndexRule("mw", "service", "service")})
	wantCode(t, err, codes.AlreadyExists, "duplicate rule")
	got, err := c.indexRule.Get(ctx, &databasev1.IndexRuleRegistryServiceGetRequest{Metadata: rule})
	if err != nil || got.GetIndexRule().GetMetadata().GetId() == 0 || got.GetIndexRule().GetType() != databasev1.IndexRule_TYPE_INVERTED {
		t.Fatalf("get rule = %v, %v", got, err)
	}

	_, err = c.binding.Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{
		IndexRuleBinding: registrytest.NewIndexRuleBinding("mw", "cpu", commonv1.Catalog_CATALOG_MEASURE, "cpu", "service", "nope")})
	wantCode(t, err, codes.FailedPrecondition, "binding to a missing rule")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "nope") {
		t.Fatalf("message %q does not name the missing rule", msg)
	}
	if _, err := c.binding.Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{
		IndexRuleBinding: registrytest.NewIndexRuleBinding("mw", "cpu", commonv1.Catalog_CATALOG_MEASURE, "cpu", "service")}); err != nil {
		t.Fatal(err)
	}
	bl, err := c.binding.List(ctx, &databasev1.IndexRuleBindingRegistryServiceListRequest{Group: "mw"})
	if err != nil || len(bl.GetIndexRuleBinding()) != 1 {
		t.Fatalf("list bindings = %v, %v", bl, err)
	}

	top := registrytest.NewTopNAggregation("mw", "top_cpu", "cpu")
	top.FieldName = "nope"
	_, err = c.topN.Create(ctx, &databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: top})
	wantCode(t, err, codes.InvalidArgument, "TopN on a missing field")
	_, err = c.topN.Create(ctx, &databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: registrytest.NewTopNAggregation("mw", "top_x", "nope")})
	wantCode(t, err, codes.FailedPrecondition, "TopN on a missing measure")
	if _, err := c.topN.Create(ctx, &databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: registrytest.NewTopNAggregation("mw", "top_cpu", "cpu")}); err != nil {
		t.Fatal(err)
	}
	tl, err := c.topN.List(ctx, &databasev1.TopNAggregationRegistryServiceListRequest{Group: "mw"})
	if err != nil || len(tl.GetTopNAggregation()) != 1 {
		t.Fatalf("list TopN = %v, %v", tl, err)
	}
	if _, err := c.topN.Delete(ctx, &databasev1.TopNAggregationRegistryServiceDeleteRequest{Metadata: &commonv1.Metadata{Group: "mw", Name: "top_cpu"}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.topN.Delete(ctx, &databasev1.TopNAggregationRegistryServiceDeleteRequest{Metadata: &commonv1.Metadata{Group: "mw", Name: "top_cpu"}})
	wantCode(t, err, codes.NotFound, "delete deleted TopN")

	tr, err := c.trace.Create(ctx, &databasev1.TraceRegistryServiceCreateRequest{Trace: registrytest.NewTrace("tw", "segment")})
	if err != nil || tr.GetModRevision() == 0 {
		t.Fatalf("create trace = %v, %v", tr, err)
	}
	_, err = c.trace.Create(ctx, &databasev1.TraceRegistryServiceCreateRequest{Trace: registrytest.NewTrace("mw", "segment")})
	wantCode(t, err, codes.FailedPrecondition, "trace in a measure group")
	tex, err := c.trace.Exist(ctx, &databasev1.TraceRegistryServiceExistRequest{Metadata: &commonv1.Metadata{Group: "tw", Name: "segment"}})
	if err != nil || !tex.GetHasGroup() || !tex.GetHasTrace() {
		t.Fatalf("trace exist = %v, %v", tex, err)
	}

	_, err = c.property.Create(ctx, &databasev1.PropertyRegistryServiceCreateRequest{})
	wantCode(t, err, codes.InvalidArgument, "property missing")
	if _, err := c.property.Create(ctx, &databasev1.PropertyRegistryServiceCreateRequest{Property: registrytest.NewProperty("pw", "ui_template")}); err != nil {
		t.Fatal(err)
	}
	pl, err := c.property.List(ctx, &databasev1.PropertyRegistryServiceListRequest{Group: "pw"})
	if err != nil || len(pl.GetProperties()) != 1 {
		t.Fatalf("list properties = %v, %v", pl, err)
	}
	pex, err := c.property.Exist(ctx, &databasev1.PropertyRegistryServiceExistRequest{Metadata: &commonv1.Metadata{Group: "nope", Name: "ui_template"}})
	if err != nil || pex.GetHasGroup() || pex.GetHasProperty() {
		t.Fatalf("property exist in missing group = %v, %v", pex, err)
	}

	del, err := c.group.Delete(ctx, &databasev1.GroupRegistryServiceDeleteRequest{Group: "mw", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	info := del.GetSchemaInfo()
	if len(info.GetMeasures()) != 1 || len(info.GetIndexRules()) != 1 || len(info.GetIndexRuleBindings()) != 1 {
		t.Fatalf("group delete info = %v", info)
	}
	_, err = c.indexRule.Get(ctx, &databasev1.IndexRuleRegistryServiceGetRequest{Metadata: rule})
	wantCode(t, err, codes.NotFound, "rule of a deleted group")
}
