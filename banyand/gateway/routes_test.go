package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	propertyv1 "github.com/banyand-io/banyand/api/proto/banyandb/property/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/pkg/registry/registrytest"
)

// route is one HTTP call of BanyanDB's API, the gRPC call it must become
// and the answer it relays.
type route struct {
	name         string
	method, path string
	body         proto.Message // sent as bydbctl sends it: protojson, lowerCamelCase
	rpc          string        // full gRPC method
	wantReq      proto.Message // what the gRPC server must receive
	resp         proto.Message // what the gRPC server answers
}

var when = time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)

// registryRoutes are the five routes of one schema registry: seg is its
// path segment, kind its message name in the request types (Stream for
// StreamRegistryService…), field the request field holding the object.
func registryRoutes(seg, kind, field string, obj proto.Message) []route {
	md := obj.ProtoReflect().Get(obj.ProtoReflect().Descriptor().Fields().ByName("metadata")).Message().Interface().(*commonv1.Metadata)
	svc := "/banyandb.database.v1." + kind + "RegistryService/"
	msg := func(suffix string, set map[string]any) proto.Message {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName("banyandb.database.v1." + kind + "RegistryService" + suffix))
		if err != nil {
			panic(err)
		}
		m := mt.New()
		for name, v := range set {
			// "?name": set only where the message has the field.
			optional := strings.HasPrefix(name, "?")
			fd := m.Descriptor().Fields().ByName(protoreflect.Name(strings.TrimPrefix(name, "?")))
			if name == "" { // the message's first field
				fd = m.Descriptor().Fields().Get(0)
			}
			if fd == nil && optional {
				continue
			}
			if fd == nil {
				panic(fmt.Sprintf("%s has no field %s", m.Descriptor().FullName(), name))
			}
			switch v := v.(type) {
			case proto.Message:
				if fd.IsList() {
					l := m.Mutable(fd).List()
					l.Append(protoreflect.ValueOfMessage(v.ProtoReflect()))
					l.Append(protoreflect.ValueOfMessage(v.ProtoReflect()))
					continue
				}
				m.Set(fd, protoreflect.ValueOfMessage(v.ProtoReflect()))
			case string:
				m.Set(fd, protoreflect.ValueOfString(v))
			case bool:
				m.Set(fd, protoreflect.ValueOfBool(v))
			case int64:
				m.Set(fd, protoreflect.ValueOfInt64(v))
			}
		}
		return m.Interface()
	}
	item := "/v1/" + seg + "/schema/" + md.GetGroup() + "/" + md.GetName()
	return []route{
		{name: kind + " create", method: http.MethodPost, path: "/v1/" + seg + "/schema", body: msg("CreateRequest", map[string]any{field: obj}),
			rpc: svc + "Create", wantReq: msg("CreateRequest", map[string]any{field: obj}), resp: msg("CreateResponse", map[string]any{"?mod_revision": int64(7)})},
		{name: kind + " update", method: http.MethodPut, path: item, body: msg("UpdateRequest", map[string]any{field: obj}),
			rpc: svc + "Update", wantReq: msg("UpdateRequest", map[string]any{field: obj}), resp: msg("UpdateResponse", map[string]any{"?mod_revision": int64(8)})},
		{name: kind + " get", method: http.MethodGet, path: item,
			rpc: svc + "Get", wantReq: msg("GetRequest", map[string]any{"metadata": md}), resp: msg("GetResponse", map[string]any{field: obj})},
		{name: kind + " list", method: http.MethodGet, path: "/v1/" + seg + "/schema/lists/" + md.GetGroup(),
			rpc: svc + "List", wantReq: msg("ListRequest", map[string]any{"group": md.GetGroup()}), resp: msg("ListResponse", map[string]any{"": obj})},
		{name: kind + " delete", method: http.MethodDelete, path: item,
			rpc: svc + "Delete", wantReq: msg("DeleteRequest", map[string]any{"metadata": md}), resp: msg("DeleteResponse", map[string]any{"?deleted": true})},
	}
}

func allRoutes() []route {
	group := registrytest.NewGroup("sw", commonv1.Catalog_CATALOG_STREAM)
	group.UpdatedAt = timestamppb.New(when)
	group.Metadata.ModRevision = 42
	stream := registrytest.NewStream("sw", "segment")
	stream.UpdatedAt = timestamppb.New(when)
	routes := []route{
		{name: "api version", method: http.MethodGet, path: "/v1/common/api/version", rpc: "/banyandb.common.v1.Service/GetAPIVersion",
			wantReq: &commonv1.GetAPIVersionRequest{}, resp: &commonv1.GetAPIVersionResponse{Version: &commonv1.APIVersion{Version: "0.10", Revision: "abc"}}},
		{name: "group create", method: http.MethodPost, path: "/v1/group/schema", body: &databasev1.GroupRegistryServiceCreateRequest{Group: group},
			rpc: "/banyandb.database.v1.GroupRegistryService/Create", wantReq: &databasev1.GroupRegistryServiceCreateRequest{Group: group}, resp: &databasev1.GroupRegistryServiceCreateResponse{}},
		{name: "group update", method: http.MethodPut, path: "/v1/group/schema/sw", body: &databasev1.GroupRegistryServiceUpdateRequest{Group: group},
			rpc: "/banyandb.database.v1.GroupRegistryService/Update", wantReq: &databasev1.GroupRegistryServiceUpdateRequest{Group: group}, resp: &databasev1.GroupRegistryServiceUpdateResponse{}},
		{name: "group get", method: http.MethodGet, path: "/v1/group/schema/sw", rpc: "/banyandb.database.v1.GroupRegistryService/Get",
			wantReq: &databasev1.GroupRegistryServiceGetRequest{Group: "sw"}, resp: &databasev1.GroupRegistryServiceGetResponse{Group: group}},
		{name: "group list", method: http.MethodGet, path: "/v1/group/schema/lists", rpc: "/banyandb.database.v1.GroupRegistryService/List",
			wantReq: &databasev1.GroupRegistryServiceListRequest{}, resp: &databasev1.GroupRegistryServiceListResponse{Group: []*commonv1.Group{group, group}}},
		{name: "group delete", method: http.MethodDelete, path: "/v1/group/schema/sw", rpc: "/banyandb.database.v1.GroupRegistryService/Delete",
			wantReq: &databasev1.GroupRegistryServiceDeleteRequest{Group: "sw"}, resp: &databasev1.GroupRegistryServiceDeleteResponse{}},
	}
	routes = append(routes, registryRoutes("stream", "Stream", "stream", stream)...)
	routes = append(routes, registryRoutes("measure", "Measure", "measure", registrytest.NewMeasure("sw", "cpm"))...)
	routes = append(routes, registryRoutes("trace", "Trace", "trace", registrytest.NewTrace("tw", "segment"))...)
	routes = append(routes, registryRoutes("property", "Property", "property", registrytest.NewProperty("pg", "ui"))...)
	routes = append(routes, registryRoutes("index-rule", "IndexRule", "index_rule", registrytest.NewIndexRule("sw", "by-svc", "service"))...)
	routes = append(routes, registryRoutes("index-rule-binding", "IndexRuleBinding", "index_rule_binding",
		registrytest.NewIndexRuleBinding("sw", "b", commonv1.Catalog_CATALOG_STREAM, "segment", "by-svc"))...)
	routes = append(routes, registryRoutes("topn-agg", "TopNAggregation", "top_n_aggregation", registrytest.NewTopNAggregation("sw", "top", "cpm"))...)
	return append(routes, dataRoutes()...)
}

func tagStr(k, v string) *modelv1.Tag {
	return &modelv1.Tag{Key: k, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: v}}}}
}

// dataRoutes are the query and property routes, with answers that hold
// every kind of tag and field value.
func dataRoutes() []route {
	tags := []*modelv1.Tag{
		tagStr("service", "svc-1"),
		{Key: "instance", Value: &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: -9007199254740993}}}},
		{Key: "labels", Value: &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"a", "b"}}}}},
		{Key: "codes", Value: &modelv1.TagValue{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: []int64{1, -2}}}}},
		{Key: "payload", Value: &modelv1.TagValue{Value: &modelv1.TagValue_BinaryData{BinaryData: []byte{0, 1, 254, 255}}}},
		{Key: "started", Value: &modelv1.TagValue{Value: &modelv1.TagValue_Timestamp{Timestamp: timestamppb.New(when)}}},
		{Key: "missing", Value: &modelv1.TagValue{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}}},
	}
	timeRange := &modelv1.TimeRange{Begin: timestamppb.New(when.Add(-time.Hour)), End: timestamppb.New(when)}
	criteria := &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
		Name: "service", Op: modelv1.Condition_BINARY_OP_EQ, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "svc-1"}}},
	}}}
	streamQuery := &streamv1.QueryRequest{
		Groups: []string{"sw"}, Name: "segment", TimeRange: timeRange, Offset: 2, Limit: 10,
		OrderBy:    &modelv1.QueryOrder{IndexRuleName: "by-svc", Sort: modelv1.Sort_SORT_DESC},
		Criteria:   criteria,
		Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "searchable", Tags: []string{"service", "instance"}}}},
	}
	topNRequest := &measurev1.TopNRequest{
		Groups: []string{"sw"}, Name: "cpm_top", TimeRange: timeRange, TopN: 3,
		Agg: modelv1.AggregationFunction_AGGREGATION_FUNCTION_MAX, FieldValueSort: modelv1.Sort_SORT_DESC,
		Conditions: []*modelv1.Condition{{Name: "service", Op: modelv1.Condition_BINARY_OP_EQ, Value: &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "svc"}}}}},
	}
	measureQuery := &measurev1.QueryRequest{
		Groups: []string{"sw"}, Name: "cpm", TimeRange: timeRange, Criteria: criteria,
		TagProjection:   &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"service"}}}},
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"count", "avg"}},
		GroupBy:         &measurev1.QueryRequest_GroupBy{TagProjection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"service"}}}}, FieldName: "count"},
		Agg:             &measurev1.QueryRequest_Aggregation{Function: modelv1.AggregationFunction_AGGREGATION_FUNCTION_SUM, FieldName: "count"},
		Top:             &measurev1.QueryRequest_Top{Number: 3, FieldName: "count", FieldValueSort: modelv1.Sort_SORT_DESC},
		Limit:           5,
	}
	property := &propertyv1.Property{Metadata: &commonv1.Metadata{Group: "pg", Name: "ui", ModRevision: 3}, Id: "p1", Tags: []*modelv1.Tag{tagStr("owner", "ops")}, UpdatedAt: timestamppb.New(when)}
	traceQuery := &tracev1.QueryRequest{
		Groups: []string{"tw"}, Name: "segment", TimeRange: timeRange, Offset: 1, Limit: 20, Criteria: criteria,
		OrderBy: &modelv1.QueryOrder{IndexRuleName: "latency", Sort: modelv1.Sort_SORT_DESC}, TagProjection: []string{"service"},
	}
	propQuery := &propertyv1.QueryRequest{Groups: []string{"pg"}, Name: "ui", Ids: []string{"p1"}, Limit: 10, TagProjection: []string{"owner"}}
	return []route{
		{name: "stream query", method: http.MethodPost, path: "/v1/stream/data", body: streamQuery, rpc: "/banyandb.stream.v1.StreamService/Query", wantReq: streamQuery,
			resp: &streamv1.QueryResponse{Elements: []*streamv1.Element{{ElementId: "el-1", Timestamp: timestamppb.New(when), TagFamilies: []*modelv1.TagFamily{{Name: "searchable", Tags: tags}}}}}},
		{name: "measure query", method: http.MethodPost, path: "/v1/measure/data", body: measureQuery, rpc: "/banyandb.measure.v1.MeasureService/Query", wantReq: measureQuery,
			resp: &measurev1.QueryResponse{DataPoints: []*measurev1.DataPoint{{
				Timestamp: timestamppb.New(when), Sid: 18446744073709551615, Version: 5,
				TagFamilies: []*modelv1.TagFamily{{Name: "default", Tags: tags[:1]}},
				Fields: []*measurev1.DataPoint_Field{
					{Name: "count", Value: &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: 12}}}},
					{Name: "avg", Value: &modelv1.FieldValue{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: 0.25}}}},
					{Name: "note", Value: &modelv1.FieldValue{Value: &modelv1.FieldValue_Str{Str: &modelv1.Str{Value: "n"}}}},
					{Name: "blob", Value: &modelv1.FieldValue{Value: &modelv1.FieldValue_BinaryData{BinaryData: []byte("xyz")}}},
					{Name: "none", Value: &modelv1.FieldValue{Value: &modelv1.FieldValue_Null{}}},
				},
			}}}},
		{name: "measure top-N", method: http.MethodPost, path: "/v1/measure/topn", body: topNRequest, rpc: "/banyandb.measure.v1.MeasureService/TopN", wantReq: topNRequest,
			resp: &measurev1.TopNResponse{Lists: []*measurev1.TopNList{{Items: []*measurev1.TopNList_Item{{
				Entity: tags[:1],
				Value:  &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: 12}}},
			}}}}}},
		{name: "property apply", method: http.MethodPut, path: "/v1/property/data/pg/ui/p1",
			body:    &propertyv1.ApplyRequest{Property: property, Strategy: propertyv1.ApplyRequest_STRATEGY_REPLACE},
			rpc:     "/banyandb.property.v1.PropertyService/Apply",
			wantReq: &propertyv1.ApplyRequest{Property: property, Strategy: propertyv1.ApplyRequest_STRATEGY_REPLACE},
			resp:    &propertyv1.ApplyResponse{Created: true, TagsNum: 1}},
		{name: "trace query", method: http.MethodPost, path: "/v1/trace/data", body: traceQuery, rpc: "/banyandb.trace.v1.TraceService/Query", wantReq: traceQuery,
			resp: &tracev1.QueryResponse{Traces: []*tracev1.Trace{{TraceId: "t-1", Spans: []*tracev1.Span{
				{SpanId: "s-1", Span: []byte{0, 1, 254, 255}, Tags: tags},
				{SpanId: "s-2", Span: []byte("segment")},
			}}}}},
		{name: "property query", method: http.MethodPost, path: "/v1/property/data/query", body: propQuery, rpc: "/banyandb.property.v1.PropertyService/Query", wantReq: propQuery,
			resp: &propertyv1.QueryResponse{Properties: []*propertyv1.Property{property}}},
		{name: "property delete", method: http.MethodDelete, path: "/v1/property/data/pg/ui/p1", rpc: "/banyandb.property.v1.PropertyService/Delete",
			wantReq: &propertyv1.DeleteRequest{Group: "pg", Name: "ui", Id: "p1"}, resp: &propertyv1.DeleteResponse{Deleted: true}},
	}
}

// TestRoutes sends every route of the API over HTTP as bydbctl does and
// checks the gRPC call it becomes, and that the JSON answer is the one
// BanyanDB's gateway writes for the same message: field names, enum
// spellings, 64-bit integers as strings, timestamps, bytes, nulls and
// unpopulated fields.
func TestRoutes(t *testing.T) {
	ref := loadReference(t)
	e := newEnv(t, 1<<20)
	for _, rt := range allRoutes() {
		t.Run(rt.name, func(t *testing.T) {
			e.fake.answer = func(method string) (proto.Message, error) {
				if method != rt.rpc {
					t.Errorf("%s %s called %s, want %s", rt.method, rt.path, method, rt.rpc)
				}
				return rt.resp, nil
			}
			var body string
			if rt.body != nil {
				b, err := protojson.Marshal(rt.body)
				if err != nil {
					t.Fatal(err)
				}
				body = string(b)
			}
			// bydbctl's HTTP client labels its JSON bodies text/plain.
			code, got := e.do(t, rt.method, "/api"+rt.path, "text/plain; charset=utf-8", body)
			if code != http.StatusOK {
				t.Fatalf("%s %s: %d %s", rt.method, rt.path, code, got)
			}
			c := e.fake.last(t)
			gotReq := rt.wantReq.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(c.req, gotReq); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(gotReq, rt.wantReq) {
				t.Errorf("gRPC request:\n got %v\nwant %v", gotReq, rt.wantReq)
			}
			if diff := cmp.Diff(decodeJSON(t, ref.bdbJSON(t, rt.resp)), decodeJSON(t, got)); diff != "" {
				t.Errorf("JSON differs from BanyanDB's (-BanyanDB +banyand):\n%s", diff)
			}
		})
	}
	e.fake.answer = nil
}

// TestBydbctlRoutes checks the paths bydbctl v0.10 requests, as it spells
// them, reach the methods they mean.
func TestBydbctlRoutes(t *testing.T) {
	e := newEnv(t, 1<<20)
	var got string
	e.fake.answer = func(method string) (proto.Message, error) {
		got = method
		return &commonv1.GetAPIVersionResponse{}, nil
	}
	for path, want := range map[string]string{
		"GET /api/v1/group/schema/lists":                 "GroupRegistryService/List",
		"GET /api/v1/stream/schema/lists/sw":             "StreamRegistryService/List",
		"GET /api/v1/measure/schema/sw/cpm":              "MeasureRegistryService/Get",
		"GET /api/v1/index-rule-binding/schema/lists/sw": "IndexRuleBindingRegistryService/List",
		"GET /api/v1/topn-agg/schema/sw/top":             "TopNAggregationRegistryService/Get",
		"GET /api/v1/property/schema/lists/pg":           "PropertyRegistryService/List",
		"DELETE /api/v1/index-rule/schema/sw/by-svc":     "IndexRuleRegistryService/Delete",
		"GET /api/v1/trace/schema/tw/segment":            "TraceRegistryService/Get",
		"POST /api/v1/property/data/query":               "PropertyService/Query",
		"DELETE /api/v1/property/data/pg/ui/p1":          "PropertyService/Delete",
	} {
		method, p, _ := strings.Cut(path, " ")
		body := ""
		if method == http.MethodPost {
			body = "{}"
		}
		if code, out := e.do(t, method, p, "", body); code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, out)
			continue
		}
		if !strings.HasSuffix(got, want) {
			t.Errorf("%s called %s, want %s", path, got, want)
		}
	}
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// TestEveryRouteTested holds TestRoutes to every method with an HTTP
// route in the protos, so a new route cannot go untested.
func TestEveryRouteTested(t *testing.T) {
	tested := map[string]bool{}
	for _, rt := range allRoutes() {
		tested[rt.rpc] = true
	}
	routed := 0
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "banyandb.") {
			return true
		}
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
				if rule == nil {
					continue
				}
				routed++
				if name := "/" + string(sd.FullName()) + "/" + string(md.Name()); !tested[name] {
					t.Errorf("%s has an HTTP route but TestRoutes does not call it", name)
				}
			}
		}
		return true
	})
	if routed != len(tested) {
		t.Errorf("%d methods have HTTP routes, TestRoutes calls %d", routed, len(tested))
	}
}
