package storage

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/route"
)

const (
	testGroup   = "g1"
	testStream  = "sw"
	testMeasure = "cpm"
)

// base is a fixed instant in the middle of a UTC day.
var base = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

func openStore(t testing.TB, dir string, groups GroupOptions) *Store {
	t.Helper()
	s := New(Config{Dir: dir}, groups, slog.New(slog.DiscardHandler))
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func streamSchema() *databasev1.Stream {
	return &databasev1.Stream{
		Metadata: &commonv1.Metadata{Group: testGroup, Name: testStream},
		TagFamilies: []*databasev1.TagFamilySpec{
			{Name: "default", Tags: []*databasev1.TagSpec{
				{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
				{Name: "instance", Type: databasev1.TagType_TAG_TYPE_STRING},
			}},
			{Name: "searchable", Tags: []*databasev1.TagSpec{
				{Name: "code", Type: databasev1.TagType_TAG_TYPE_INT},
				{Name: "labels", Type: databasev1.TagType_TAG_TYPE_STRING_ARRAY},
				{Name: "ids", Type: databasev1.TagType_TAG_TYPE_INT_ARRAY},
				{Name: "blob", Type: databasev1.TagType_TAG_TYPE_DATA_BINARY},
				{Name: "at", Type: databasev1.TagType_TAG_TYPE_TIMESTAMP},
				{Name: "opt", Type: databasev1.TagType_TAG_TYPE_STRING},
			}},
		},
		Entity: &databasev1.Entity{TagNames: []string{"service", "instance"}},
	}
}

func measureSchema() *databasev1.Measure {
	return &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: testGroup, Name: testMeasure},
		TagFamilies: []*databasev1.TagFamilySpec{
			{Name: "default", Tags: []*databasev1.TagSpec{
				{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
				{Name: "code", Type: databasev1.TagType_TAG_TYPE_INT},
			}},
		},
		Fields: []*databasev1.FieldSpec{
			{Name: "total", FieldType: databasev1.FieldType_FIELD_TYPE_INT},
			{Name: "ratio", FieldType: databasev1.FieldType_FIELD_TYPE_FLOAT},
			{Name: "label", FieldType: databasev1.FieldType_FIELD_TYPE_STRING},
			{Name: "raw", FieldType: databasev1.FieldType_FIELD_TYPE_DATA_BINARY},
		},
		Entity: &databasev1.Entity{TagNames: []string{"service"}},
	}
}

func str(s string) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: s}}}
}

func intv(i int64) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: i}}}
}

func null() *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}}
}

// elem describes one stream element of the test schema.
type elem struct {
	service, instance string
	id                string
	ts                time.Time
	code              int64
}

func (e elem) value() *streamv1.ElementValue {
	return &streamv1.ElementValue{
		ElementId: e.id,
		Timestamp: timestamppb.New(e.ts),
		TagFamilies: []*modelv1.TagFamilyForWrite{
			{Tags: []*modelv1.TagValue{str(e.service), str(e.instance)}},
			{Tags: []*modelv1.TagValue{
				intv(e.code),
				{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"a", e.id}}}},
				{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: []int64{1, e.code}}}},
				{Value: &modelv1.TagValue_BinaryData{BinaryData: []byte("bin-" + e.id)}},
				{Value: &modelv1.TagValue_Timestamp{Timestamp: timestamppb.New(e.ts.Add(-time.Second))}},
				null(),
			}},
		},
	}
}

func streamSeriesKey(t testing.TB, service, instance string) []byte {
	t.Helper()
	k, err := route.AppendSeriesKey(nil, testStream, []route.EntityValue{route.StrValue(service), route.StrValue(instance)})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (e elem) msg(t testing.TB) []byte {
	t.Helper()
	return streamWriteIn(t, testGroup, e)
}

func streamWriteIn(t testing.TB, group string, e elem) []byte {
	t.Helper()
	b, err := proto.Marshal(&clusterv1.StreamWrite{
		Group:     group,
		Name:      testStream,
		SeriesKey: streamSeriesKey(t, e.service, e.instance),
		Element:   e.value(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func streamMsgs(t testing.TB, es []elem) [][]byte {
	msgs := make([][]byte, len(es))
	for i, e := range es {
		msgs[i] = e.msg(t)
	}
	return msgs
}

func mustWriteStream(t testing.TB, s *Store, es []elem) {
	t.Helper()
	if errs := s.WriteStream(context.Background(), streamMsgs(t, es)); errs != nil {
		t.Fatalf("write stream: %v", errs)
	}
}

// point describes one measure data point of the test schema.
type point struct {
	service string
	ts      time.Time
	code    int64
	total   int64
	version int64
}

func (p point) value() *measurev1.DataPointValue {
	return &measurev1.DataPointValue{
		Timestamp: timestamppb.New(p.ts),
		TagFamilies: []*modelv1.TagFamilyForWrite{
			{Tags: []*modelv1.TagValue{str(p.service), intv(p.code)}},
		},
		Fields: []*modelv1.FieldValue{
			{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: p.total}}},
			{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: float64(p.total) / 3}}},
			{Value: &modelv1.FieldValue_Str{Str: &modelv1.Str{Value: fmt.Sprintf("v%d", p.version)}}},
			{Value: &modelv1.FieldValue_BinaryData{BinaryData: []byte{1, 2, byte(p.total)}}},
		},
		Version: p.version,
	}
}

func (p point) msg(t testing.TB) []byte {
	t.Helper()
	k, err := route.AppendSeriesKey(nil, testMeasure, []route.EntityValue{route.StrValue(p.service)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&clusterv1.MeasureWrite{Group: testGroup, Name: testMeasure, SeriesKey: k, DataPoint: p.value()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustWriteMeasure(t testing.TB, s *Store, ps []point) {
	t.Helper()
	msgs := make([][]byte, len(ps))
	for i, p := range ps {
		msgs[i] = p.msg(t)
	}
	if errs := s.WriteMeasure(context.Background(), msgs); errs != nil {
		t.Fatalf("write measure: %v", errs)
	}
}

func timeRange(begin, end time.Time) *modelv1.TimeRange {
	return &modelv1.TimeRange{Begin: timestamppb.New(begin), End: timestamppb.New(end)}
}

func allStreamTags() *modelv1.TagProjection {
	return &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{
		{Name: "default", Tags: []string{"service", "instance"}},
		{Name: "searchable", Tags: []string{"code", "labels", "ids", "blob", "at", "opt"}},
	}}
}

func streamQuery(req *streamv1.QueryRequest) *clusterv1.StreamQuery {
	if req.Groups == nil {
		req.Groups = []string{testGroup}
	}
	if req.Name == "" {
		req.Name = testStream
	}
	return &clusterv1.StreamQuery{Request: req, Schema: streamSchema()}
}

func measureQuery(req *measurev1.QueryRequest) *clusterv1.MeasureQuery {
	if req.Groups == nil {
		req.Groups = []string{testGroup}
	}
	if req.Name == "" {
		req.Name = testMeasure
	}
	return &clusterv1.MeasureQuery{Request: req, Schema: measureSchema()}
}

func eq(name string, v *modelv1.TagValue) *modelv1.Criteria {
	return cond(name, modelv1.Condition_BINARY_OP_EQ, v)
}

func cond(name string, op modelv1.Condition_BinaryOp, v *modelv1.TagValue) *modelv1.Criteria {
	return &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: name, Op: op, Value: v}}}
}

func and(l, r *modelv1.Criteria) *modelv1.Criteria {
	return &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{
		Op: modelv1.LogicalExpression_LOGICAL_OP_AND, Left: l, Right: r,
	}}}
}

func or(l, r *modelv1.Criteria) *modelv1.Criteria {
	return &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{
		Op: modelv1.LogicalExpression_LOGICAL_OP_OR, Left: l, Right: r,
	}}}
}

func mustQueryStream(t testing.TB, s *Store, req *streamv1.QueryRequest) []*streamv1.Element {
	t.Helper()
	resp, err := s.QueryStream(context.Background(), streamQuery(req))
	if err != nil {
		t.Fatalf("query stream: %v", err)
	}
	return resp.GetElements()
}

// ids lists element ids in response order.
func ids(es []*streamv1.Element) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.GetElementId()
	}
	return out
}
