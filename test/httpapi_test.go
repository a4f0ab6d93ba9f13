package test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/banyand/roles"
	"github.com/banyand-io/banyand/internal/poll"
	"github.com/banyand-io/banyand/pkg/registry/registrytest"
)

// httpAPI calls a role's BanyanDB HTTP API as bydbctl and curl do.
type httpAPI struct {
	t      *testing.T
	base   string // http(s)://host:port
	client *http.Client
	header http.Header // sent with every request
}

func newHTTPAPI(t *testing.T, base string, tlsCfg *tls.Config) *httpAPI {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 30 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	return &httpAPI{t: t, base: base, client: client, header: http.Header{}}
}

// with is a copy of a that sends header k: v too.
func (a *httpAPI) with(k, v string) *httpAPI {
	c := *a
	c.header = a.header.Clone()
	c.header.Set(k, v)
	return &c
}

// call sends one request; a proto.Message body is sent as protojson,
// a string as it is, with Content-Type application/json.
func (a *httpAPI) call(method, path string, body any) (int, []byte) {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case proto.Message:
		raw, err := protojson.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = strings.NewReader(string(raw))
	}
	req, err := http.NewRequestWithContext(context.Background(), method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header = a.header.Clone()
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, out
}

// ok sends a request that must succeed and decodes its JSON answer into
// into, when not nil.
func (a *httpAPI) ok(method, path string, body any, into proto.Message) []byte {
	a.t.Helper()
	code, out := a.call(method, path, body)
	if code != http.StatusOK {
		a.t.Fatalf("%s %s: HTTP %d %s", method, path, code, out)
	}
	if into != nil {
		if err := protojson.Unmarshal(out, into); err != nil {
			a.t.Fatalf("%s %s: answer %s: %v", method, path, out, err)
		}
	}
	return out
}

// fails sends a request that must fail with the HTTP status and gRPC code
// in grpc-gateway's JSON error body.
func (a *httpAPI) fails(method, path string, body any, wantHTTP int, wantCode int) {
	a.t.Helper()
	code, out := a.call(method, path, body)
	var e struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
	}
	if code != wantHTTP || json.Unmarshal(out, &e) != nil || e.Code == nil || *e.Code != wantCode || e.Message == "" {
		a.t.Fatalf("%s %s: HTTP %d %s, want %d with a JSON error of code %d", method, path, code, out, wantHTTP, wantCode)
	}
}

// startHTTPStandalone runs a standalone with its HTTP port on a free
// loopback port; adjust changes it before it starts.
func startHTTPStandalone(t *testing.T, adjust func(*roles.Standalone)) (*roles.Standalone, *runningRole) {
	t.Helper()
	var sa roles.Standalone
	sa.SetDefaults("127.0.0.1:0", t.TempDir())
	sa.HTTPAddr = "127.0.0.1:0"
	if adjust != nil {
		adjust(&sa)
	}
	r := runRole(t, "standalone", &sa, func() bool { return sa.ClientAddr() != "" && sa.HTTPBoundAddr() != "" })
	return &sa, r
}

// waitReady polls /readyz: the API serves from then on.
func waitReady(t *testing.T, a *httpAPI) {
	t.Helper()
	poll.Within(t, 30*time.Second, "the role is ready", func() bool {
		code, _ := a.call(http.MethodGet, "/readyz", nil)
		return code == http.StatusOK
	})
}

func TestHTTPAPI(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		sa, _ := startHTTPStandalone(t, nil)
		api := newHTTPAPI(t, "http://"+sa.HTTPBoundAddr(), nil)
		waitReady(t, api)
		checkHTTPAPI(t, api, dial(t, sa.ClientAddr()))
		// HTTP calls are gRPC calls of the server: its metrics count them.
		m := scrape(t, sa.HTTPBoundAddr())
		m.want(t, "group creates through HTTP", atLeast(4), "banyand_grpc_server_handled_total",
			`grpc_method="Create"`, `grpc_service="banyandb.database.v1.GroupRegistryService"`, `grpc_code="OK"`)
		m.want(t, "HTTP 404s", positive, "banyand_grpc_server_handled_total", `grpc_method="Get"`, `grpc_code="NotFound"`)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 0)
		l := newLiaison(c.etcd.Endpoint())
		l.HTTPAddr = "127.0.0.1:0"
		runRole(t, "liaison", l, func() bool { return l.ClientAddr() != "" && l.HTTPBoundAddr() != "" })
		api := newHTTPAPI(t, "http://"+l.HTTPBoundAddr(), nil)
		waitReady(t, api)
		checkHTTPAPI(t, api, dial(t, l.ClientAddr()))
	})
}

// checkHTTPAPI drives every route of the HTTP API: health, API version,
// create, get, list, update and delete of every registry, stream and
// measure queries of data written through gRPC, property apply, query and
// delete, and bad input, which leaves the server serving.
func checkHTTPAPI(t *testing.T, api *httpAPI, conn *grpc.ClientConn) {
	if got := string(api.ok(http.MethodGet, "/api/healthz", nil, nil)); got != "SERVING" {
		t.Fatalf("healthz: %q, want SERVING", got)
	}
	var ver commonv1.GetAPIVersionResponse
	api.ok(http.MethodGet, "/api/v1/common/api/version", nil, &ver)
	if ver.GetVersion().GetVersion() != "0.10" {
		t.Fatalf("API version %v", ver.GetVersion())
	}

	// Groups and the stream and measure of the gRPC scenarios, as a user
	// would write them with curl.
	api.ok(http.MethodPost, "/api/v1/group/schema", `{"group": {"metadata": {"name": "`+streamGroup+`"}, "catalog": "CATALOG_STREAM",
		"resource_opts": {"shard_num": 2, "segment_interval": {"unit": "UNIT_DAY", "num": 1}, "ttl": {"unit": "UNIT_DAY", "num": 7}}}}`, nil)
	api.ok(http.MethodPost, "/api/v1/stream/schema", `{"stream": {"metadata": {"group": "`+streamGroup+`", "name": "`+streamName+`"},
		"tagFamilies": [
		  {"name": "searchable", "tags": [{"name": "service", "type": "TAG_TYPE_STRING"}, {"name": "instance", "type": "TAG_TYPE_INT"},
		    {"name": "labels", "type": "TAG_TYPE_STRING_ARRAY"}, {"name": "codes", "type": "TAG_TYPE_INT_ARRAY"}, {"name": "started", "type": "TAG_TYPE_TIMESTAMP"}]},
		  {"name": "data", "tags": [{"name": "payload", "type": "TAG_TYPE_DATA_BINARY"}]}],
		"entity": {"tagNames": ["service", "instance"]}}}`, nil)
	api.ok(http.MethodPost, "/api/v1/group/schema", &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: measureGroup}, Catalog: commonv1.Catalog_CATALOG_MEASURE, ResourceOpts: &commonv1.ResourceOpts{ShardNum: 2},
	}}, nil)
	measure := &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: measureGroup, Name: measureName},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{
			{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING}, {Name: "region", Type: databasev1.TagType_TAG_TYPE_STRING},
		}}},
		Fields: []*databasev1.FieldSpec{
			{Name: "count", FieldType: databasev1.FieldType_FIELD_TYPE_INT}, {Name: "avg", FieldType: databasev1.FieldType_FIELD_TYPE_FLOAT},
			{Name: "note", FieldType: databasev1.FieldType_FIELD_TYPE_STRING}, {Name: "blob", FieldType: databasev1.FieldType_FIELD_TYPE_DATA_BINARY},
		},
		Entity: &databasev1.Entity{TagNames: []string{"service"}},
	}
	api.ok(http.MethodPost, "/api/v1/measure/schema", &databasev1.MeasureRegistryServiceCreateRequest{Measure: measure}, nil)

	// Written through gRPC, read back through gRPC and then HTTP.
	checkStreamRoundTrip(t, conn, 50, 5)
	checkMeasureRoundTrip(t, conn, 40, 4)
	checkHTTPQueries(t, api, conn)

	checkHTTPRegistries(t, api, measure)
	checkHTTPProperties(t, api, conn)
	checkHTTPTraces(t, api, conn)
	checkHTTPBadInput(t, api)
}

// checkHTTPQueries queries through HTTP what the gRPC scenarios wrote: the
// answers are those of gRPC, as JSON.
func checkHTTPQueries(t *testing.T, api *httpAPI, conn *grpc.ClientConn) {
	t.Helper()
	window := &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(24 * time.Hour))}
	sq := &streamv1.QueryRequest{
		Groups: []string{streamGroup}, Name: streamName, TimeRange: window, Limit: 100,
		OrderBy: &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_ASC},
		Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{
			{Name: "searchable", Tags: []string{"service", "instance", "labels", "codes", "started"}},
			{Name: "data", Tags: []string{"payload"}},
		}},
	}
	viaGRPC, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), sq)
	if err != nil {
		t.Fatal(err)
	}
	var viaHTTP streamv1.QueryResponse
	sameJSON(t, "stream query", api.ok(http.MethodPost, "/api/v1/stream/data", sq, &viaHTTP), viaGRPC)
	if len(viaHTTP.GetElements()) != 50 {
		t.Fatalf("stream query through HTTP: %d elements, want 50", len(viaHTTP.GetElements()))
	}

	mq := &measurev1.QueryRequest{
		Groups: []string{measureGroup}, Name: measureName, TimeRange: window, Limit: 100,
		TagProjection:   &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"service", "region"}}}},
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"count", "avg", "note", "blob"}},
		Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
			Name: "service", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("svc-1"),
		}}},
	}
	mGRPC, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), mq)
	if err != nil {
		t.Fatal(err)
	}
	var mHTTP measurev1.QueryResponse
	sameJSON(t, "measure query", api.ok(http.MethodPost, "/api/v1/measure/data", mq, &mHTTP), mGRPC)
	if len(mHTTP.GetDataPoints()) != 10 {
		t.Fatalf("measure query through HTTP: %d points, want 10", len(mHTTP.GetDataPoints()))
	}
}

// sameJSON checks an HTTP answer is the gRPC answer as the gateway's
// marshaler writes it (unpopulated fields included).
func sameJSON(t *testing.T, what string, got []byte, want proto.Message) {
	t.Helper()
	raw, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v: %s", what, err, got)
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Fatalf("%s: HTTP answer differs from gRPC's (-gRPC +HTTP):\n%s", what, diff)
	}
}

// registryCase is one registry's five routes.
type registryCase struct {
	seg    string        // path segment: stream, index-rule…
	create proto.Message // the Create request (body)
	update proto.Message // the Update request (body), with a change
	group  string
	name   string
	// changed says whether a Get answer shows update's change.
	changed func(body []byte) bool
}

func checkHTTPRegistries(t *testing.T, api *httpAPI, measure *databasev1.Measure) {
	t.Helper()
	// The groups of the trace and property schemas.
	api.ok(http.MethodPost, "/api/v1/group/schema", &databasev1.GroupRegistryServiceCreateRequest{Group: registrytest.NewGroup("tg", commonv1.Catalog_CATALOG_TRACE)}, nil)
	api.ok(http.MethodPost, "/api/v1/group/schema", &databasev1.GroupRegistryServiceCreateRequest{Group: registrytest.NewGroup("pg", commonv1.Catalog_CATALOG_PROPERTY)}, nil)

	rule := registrytest.NewIndexRule(measureGroup, "by-region", "region")
	rule2 := proto.Clone(rule).(*databasev1.IndexRule)
	rule2.Tags = []string{"service"}
	binding := registrytest.NewIndexRuleBinding(measureGroup, "cpm-rules", commonv1.Catalog_CATALOG_MEASURE, measureName, "by-region")
	binding2 := proto.Clone(binding).(*databasev1.IndexRuleBinding)
	binding2.ExpireAt = timestamppb.New(time.Date(2098, 1, 1, 0, 0, 0, 0, time.UTC))
	topn := registrytest.NewTopNAggregation(measureGroup, "top-count", measureName)
	topn.FieldName = "count"
	topn2 := proto.Clone(topn).(*databasev1.TopNAggregation)
	topn2.LruSize = 20
	trace := registrytest.NewTrace("tg", "segment")
	trace2 := proto.Clone(trace).(*databasev1.Trace)
	trace2.Tags = append(trace2.Tags, &databasev1.TraceTagSpec{Name: "endpoint", Type: databasev1.TagType_TAG_TYPE_STRING})
	prop := registrytest.NewProperty("pg", "ui")
	prop2 := proto.Clone(prop).(*databasev1.Property)
	prop2.Tags = append(prop2.Tags, &databasev1.TagSpec{Name: "owner", Type: databasev1.TagType_TAG_TYPE_STRING})
	measure2 := proto.Clone(measure).(*databasev1.Measure)
	measure2.Fields = append(measure2.Fields, &databasev1.FieldSpec{Name: "max", FieldType: databasev1.FieldType_FIELD_TYPE_INT})
	stream := registrytest.NewStream(streamGroup, "segment")
	stream2 := proto.Clone(stream).(*databasev1.Stream)
	stream2.TagFamilies[0].Tags = append(stream2.TagFamilies[0].Tags, &databasev1.TagSpec{Name: "endpoint", Type: databasev1.TagType_TAG_TYPE_STRING})
	has := func(s string) func([]byte) bool { return func(b []byte) bool { return strings.Contains(string(b), s) } }

	for _, c := range []registryCase{
		{"stream", &databasev1.StreamRegistryServiceCreateRequest{Stream: stream}, &databasev1.StreamRegistryServiceUpdateRequest{Stream: stream2}, streamGroup, "segment", has(`"endpoint"`)},
		{"measure", nil, &databasev1.MeasureRegistryServiceUpdateRequest{Measure: measure2}, measureGroup, measureName, has(`"max"`)},
		{"index-rule", &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: rule}, &databasev1.IndexRuleRegistryServiceUpdateRequest{IndexRule: rule2}, measureGroup, "by-region", has(`["service"]`)},
		{"index-rule-binding", &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: binding}, &databasev1.IndexRuleBindingRegistryServiceUpdateRequest{IndexRuleBinding: binding2}, measureGroup, "cpm-rules", has(`2098-01-01`)},
		{"topn-agg", &databasev1.TopNAggregationRegistryServiceCreateRequest{TopNAggregation: topn}, &databasev1.TopNAggregationRegistryServiceUpdateRequest{TopNAggregation: topn2}, measureGroup, "top-count", has(`"lruSize":20`)},
		{"trace", &databasev1.TraceRegistryServiceCreateRequest{Trace: trace}, &databasev1.TraceRegistryServiceUpdateRequest{Trace: trace2}, "tg", "segment", has(`"endpoint"`)},
		{"property", &databasev1.PropertyRegistryServiceCreateRequest{Property: prop}, &databasev1.PropertyRegistryServiceUpdateRequest{Property: prop2}, "pg", "ui", has(`"owner"`)},
	} {
		item := fmt.Sprintf("/api/v1/%s/schema/%s/%s", c.seg, c.group, c.name)
		if c.create != nil {
			api.ok(http.MethodPost, "/api/v1/"+c.seg+"/schema", c.create, nil)
			api.fails(http.MethodPost, "/api/v1/"+c.seg+"/schema", c.create, http.StatusConflict, 6) // ALREADY_EXISTS
		}
		if got := api.ok(http.MethodGet, item, nil, nil); !strings.Contains(string(got), `"name":"`+c.name+`"`) {
			t.Fatalf("get %s: %s", item, got)
		}
		if got := api.ok(http.MethodGet, "/api/v1/"+c.seg+"/schema/lists/"+c.group, nil, nil); !strings.Contains(string(got), `"name":"`+c.name+`"`) {
			t.Fatalf("list %s: %s", c.seg, got)
		}
		api.ok(http.MethodPut, item, c.update, nil)
		if got := api.ok(http.MethodGet, item, nil, nil); !c.changed(got) {
			t.Fatalf("%s after update: %s", item, got)
		}
	}
	// Delete in reverse dependency order, then every one is gone.
	for _, p := range []string{
		"property/schema/pg/ui", "trace/schema/tg/segment", "topn-agg/schema/" + measureGroup + "/top-count",
		"index-rule-binding/schema/" + measureGroup + "/cpm-rules", "index-rule/schema/" + measureGroup + "/by-region",
		"stream/schema/" + streamGroup + "/segment", "measure/schema/" + measureGroup + "/" + measureName,
	} {
		var del struct {
			Deleted bool `json:"deleted"`
		}
		if err := json.Unmarshal(api.ok(http.MethodDelete, "/api/v1/"+p, nil, nil), &del); err != nil || !del.Deleted {
			t.Fatalf("delete %s: deleted=%v (%v)", p, del.Deleted, err)
		}
		api.fails(http.MethodGet, "/api/v1/"+p, nil, http.StatusNotFound, 5)
	}

	// Groups: get, list, update, delete.
	var g databasev1.GroupRegistryServiceGetResponse
	api.ok(http.MethodGet, "/api/v1/group/schema/tg", nil, &g)
	if g.GetGroup().GetCatalog() != commonv1.Catalog_CATALOG_TRACE {
		t.Fatalf("group tg: %v", g.GetGroup())
	}
	var gl databasev1.GroupRegistryServiceListResponse
	api.ok(http.MethodGet, "/api/v1/group/schema/lists", nil, &gl)
	if len(gl.GetGroup()) != 4 {
		t.Fatalf("group list: %d groups, want 4", len(gl.GetGroup()))
	}
	upd := proto.Clone(g.GetGroup()).(*commonv1.Group)
	upd.ResourceOpts.Ttl = &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 3}
	upd.UpdatedAt = nil
	api.ok(http.MethodPut, "/api/v1/group/schema/tg", &databasev1.GroupRegistryServiceUpdateRequest{Group: upd}, nil)
	api.ok(http.MethodGet, "/api/v1/group/schema/tg", nil, &g)
	if g.GetGroup().GetResourceOpts().GetTtl().GetNum() != 3 {
		t.Fatalf("group tg after update: %v", g.GetGroup())
	}
	api.ok(http.MethodDelete, "/api/v1/group/schema/tg", nil, nil)
	api.fails(http.MethodGet, "/api/v1/group/schema/tg", nil, http.StatusNotFound, 5)
}

// checkHTTPProperties applies, queries and deletes properties through
// HTTP and reads them through gRPC too.
func checkHTTPProperties(t *testing.T, api *httpAPI, conn *grpc.ClientConn) {
	t.Helper()
	api.ok(http.MethodPost, "/api/v1/property/schema", &databasev1.PropertyRegistryServiceCreateRequest{Property: &databasev1.Property{
		Metadata: &commonv1.Metadata{Group: "pg", Name: "settings"},
		Tags:     []*databasev1.TagSpec{{Name: "owner", Type: databasev1.TagType_TAG_TYPE_STRING}, {Name: "level", Type: databasev1.TagType_TAG_TYPE_INT}},
	}}, nil)
	for i, id := range []string{"p1", "p2"} {
		var applied propertyv1.ApplyResponse
		api.ok(http.MethodPut, "/api/v1/property/data/pg/settings/"+id, &propertyv1.ApplyRequest{
			Property: newProperty("pg", "settings", id, propStr("owner", "ops"), propInt("level", int64(i))),
		}, &applied)
		if !applied.GetCreated() || applied.GetTagsNum() != 2 {
			t.Fatalf("apply %s: %v", id, &applied)
		}
	}
	var q propertyv1.QueryResponse
	api.ok(http.MethodPost, "/api/v1/property/data/query", `{"groups": ["pg"], "name": "settings", "ids": ["p2"]}`, &q)
	if len(q.GetProperties()) != 1 || q.GetProperties()[0].GetId() != "p2" || q.GetProperties()[0].GetTags()[1].GetValue().GetInt().GetValue() != 1 {
		t.Fatalf("property query: %v", q.GetProperties())
	}
	var del propertyv1.DeleteResponse
	api.ok(http.MethodDelete, "/api/v1/property/data/pg/settings/p1", nil, &del)
	if !del.GetDeleted() {
		t.Fatal("delete p1: not deleted")
	}
	if got := queryIDs(t, propertyv1.NewPropertyServiceClient(conn), &propertyv1.QueryRequest{Groups: []string{"pg"}, Name: "settings"}); len(got) != 1 || got["p2"] == nil {
		t.Fatalf("after delete through HTTP, gRPC reads %v", got)
	}
}

// checkHTTPBadInput sends bad input: each is a clear 4xx with a JSON
// error, and the API keeps serving.
func checkHTTPBadInput(t *testing.T, api *httpAPI) {
	t.Helper()
	for _, c := range []struct {
		name, method, path string
		body               any
		wantHTTP, wantCode int
	}{
		{"malformed JSON", http.MethodPost, "/api/v1/group/schema", `{"group": {"metadata": `, http.StatusBadRequest, 3},
		{"unknown route", http.MethodGet, "/api/v1/nothing/here", nil, http.StatusNotFound, 5},
		{"a stream query sent to group create", http.MethodPost, "/api/v1/group/schema", `{"groups": ["x"], "name": "log", "limit": 10}`, http.StatusBadRequest, 3},
		{"a group sent as a stream query", http.MethodPost, "/api/v1/stream/data", `{"group": {"metadata": {"name": "x"}}}`, http.StatusBadRequest, 3},
		{"a field of the wrong type", http.MethodPost, "/api/v1/measure/data", `{"groups": "sw_metric"}`, http.StatusBadRequest, 3},
		{"query of an unknown stream", http.MethodPost, "/api/v1/stream/data", `{"groups": ["nope"], "name": "log", "timeRange": {"begin": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z"}}`, http.StatusNotFound, 5},
		{"wrong method", http.MethodPatch, "/api/v1/group/schema/x", `{}`, http.StatusMethodNotAllowed, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			api.fails(c.method, c.path, c.body, c.wantHTTP, c.wantCode)
		})
	}
	code, out := api.callRaw(http.MethodPost, "/api/v1/group/schema", "<group/>", "application/xml")
	if code != http.StatusUnsupportedMediaType || !strings.Contains(string(out), `"code":3`) {
		t.Fatalf("XML body: HTTP %d %s, want 415 with a JSON error", code, out)
	}
	if got := string(api.ok(http.MethodGet, "/api/healthz", nil, nil)); got != "SERVING" {
		t.Fatalf("healthz after bad input: %q", got)
	}
}

// callRaw sends body with the given Content-Type.
func (a *httpAPI) callRaw(method, path, body, contentType string) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header = a.header.Clone()
	req.Header.Set("Content-Type", contentType)
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// checkHTTPTraces writes spans through gRPC and reads them through
// POST /v1/trace/data: the answer is gRPC's, as JSON.
func checkHTTPTraces(t *testing.T, api *httpAPI, conn *grpc.ClientConn) {
	t.Helper()
	createTraceSchema(t, conn, 2, 0)
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var writes []*oapTraceWrite
	for j := range 3 {
		writes = append(writes, oapSegment(traceGroup, 4, j, start))
	}
	res, err := flushTraces(conn, writes)
	checkFlush(t, "spans for HTTP", res, err, len(writes))
	tq := &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Criteria: eqCond("trace_id", strValue("trace-004")), TagProjection: segmentTags}
	viaGRPC, err := tracev1.NewTraceServiceClient(conn).Query(ctxT(t), tq)
	if err != nil {
		t.Fatal(err)
	}
	var viaHTTP tracev1.QueryResponse
	sameJSON(t, "trace query", api.ok(http.MethodPost, "/api/v1/trace/data", tq, &viaHTTP), viaGRPC)
	if len(viaHTTP.GetTraces()) != 1 {
		t.Fatalf("trace query through HTTP: %d traces, want 1", len(viaHTTP.GetTraces()))
	}
	checkTrace(t, "trace through HTTP", viaHTTP.GetTraces()[0], writes, segmentTags)
}
