package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/elementid"
)

// The scenarios below run against any deployment (standalone or cluster):
// they only use the public API, as a BanyanDB client would.

const (
	streamGroup  = "sw_stream"
	measureGroup = "sw_metric"
	streamName   = "log"
	measureName  = "cpm"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createStreamSchema(t *testing.T, conn *grpc.ClientConn, shards uint32) {
	t.Helper()
	createReplicatedStreamSchema(t, conn, shards, 0)
}

func createReplicatedStreamSchema(t *testing.T, conn *grpc.ClientConn, shards, replicas uint32) {
	t.Helper()
	ctx := ctxT(t)
	groups := databasev1.NewGroupRegistryServiceClient(conn)
	if _, err := groups.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata:     &commonv1.Metadata{Name: streamGroup},
		Catalog:      commonv1.Catalog_CATALOG_STREAM,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards, Replicas: replicas, SegmentInterval: &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}, Ttl: &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 7}},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	streams := databasev1.NewStreamRegistryServiceClient(conn)
	if _, err := streams.Create(ctx, &databasev1.StreamRegistryServiceCreateRequest{Stream: &databasev1.Stream{
		Metadata: &commonv1.Metadata{Group: streamGroup, Name: streamName},
		TagFamilies: []*databasev1.TagFamilySpec{
			{Name: "searchable", Tags: []*databasev1.TagSpec{
				{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
				{Name: "instance", Type: databasev1.TagType_TAG_TYPE_INT},
				{Name: "labels", Type: databasev1.TagType_TAG_TYPE_STRING_ARRAY},
				{Name: "codes", Type: databasev1.TagType_TAG_TYPE_INT_ARRAY},
				{Name: "started", Type: databasev1.TagType_TAG_TYPE_TIMESTAMP},
			}},
			{Name: "data", Tags: []*databasev1.TagSpec{
				{Name: "payload", Type: databasev1.TagType_TAG_TYPE_DATA_BINARY},
			}},
		},
		Entity: &databasev1.Entity{TagNames: []string{"service", "instance"}},
	}}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
}

func createMeasureSchema(t *testing.T, conn *grpc.ClientConn, shards uint32) {
	t.Helper()
	ctx := ctxT(t)
	groups := databasev1.NewGroupRegistryServiceClient(conn)
	if _, err := groups.Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata:     &commonv1.Metadata{Name: measureGroup},
		Catalog:      commonv1.Catalog_CATALOG_MEASURE,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	measures := databasev1.NewMeasureRegistryServiceClient(conn)
	if _, err := measures.Create(ctx, &databasev1.MeasureRegistryServiceCreateRequest{Measure: &databasev1.Measure{
		Metadata: &commonv1.Metadata{Group: measureGroup, Name: measureName},
		TagFamilies: []*databasev1.TagFamilySpec{{Name: "default", Tags: []*databasev1.TagSpec{
			{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "region", Type: databasev1.TagType_TAG_TYPE_STRING},
		}}},
		Fields: []*databasev1.FieldSpec{
			{Name: "count", FieldType: databasev1.FieldType_FIELD_TYPE_INT},
			{Name: "avg", FieldType: databasev1.FieldType_FIELD_TYPE_FLOAT},
			{Name: "note", FieldType: databasev1.FieldType_FIELD_TYPE_STRING},
			{Name: "blob", FieldType: databasev1.FieldType_FIELD_TYPE_DATA_BINARY},
		},
		Entity: &databasev1.Entity{TagNames: []string{"service"}},
	}}); err != nil {
		t.Fatalf("create measure: %v", err)
	}
}

var baseTime = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func str(s string) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: s}}}
}
func num(i int64) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: i}}}
}

// element i belongs to entity (svc-i%entities, i%3) and carries every tag type.
func testElement(i, entities int) *streamv1.ElementValue {
	var started *modelv1.TagValue
	if i%5 == 0 {
		started = &modelv1.TagValue{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}}
	} else {
		started = &modelv1.TagValue{Value: &modelv1.TagValue_Timestamp{Timestamp: timestamppb.New(baseTime.Add(-time.Duration(i) * time.Second))}}
	}
	return &streamv1.ElementValue{
		ElementId: fmt.Sprintf("el-%05d", i),
		Timestamp: timestamppb.New(baseTime.Add(time.Duration(i) * time.Millisecond)),
		TagFamilies: []*modelv1.TagFamilyForWrite{
			{Tags: []*modelv1.TagValue{
				str(fmt.Sprintf("svc-%d", i%entities)),
				num(int64(i % 3)),
				{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"a", fmt.Sprint(i)}}}},
				{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: []int64{int64(i), -1}}}},
				started,
			}},
			{Tags: []*modelv1.TagValue{{Value: &modelv1.TagValue_BinaryData{BinaryData: []byte(fmt.Sprintf("payload-%d", i))}}}},
		},
	}
}

// answeredID is the id a stream query answers for the test stream's
// element written with id (BanyanDB's form).
func answeredID(id string) string { return elementid.Of(streamGroup, streamName, id) }

// answeredIDs is answeredID of each of ids, in order.
func answeredIDs(ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = answeredID(id)
	}
	return out
}

// writeStream sends reqs on one Write stream and returns the status of
// every message id.
func writeStream(t *testing.T, conn *grpc.ClientConn, reqs []*streamv1.WriteRequest) map[uint64]string {
	t.Helper()
	ws, err := streamv1.NewStreamServiceClient(conn).Write(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[uint64]string{}
	recvDone := make(chan error, 1)
	go func() {
		for {
			resp, err := ws.Recv()
			if errors.Is(err, io.EOF) {
				recvDone <- nil
				return
			}
			if err != nil {
				recvDone <- err
				return
			}
			statuses[resp.GetMessageId()] = resp.GetStatus()
		}
	}()
	for _, r := range reqs {
		if err := ws.Send(r); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	if err := ws.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := <-recvDone; err != nil {
		t.Fatalf("recv: %v", err)
	}
	return statuses
}

func queryAllStream(t *testing.T, conn *grpc.ClientConn, limit uint32) []*streamv1.Element {
	t.Helper()
	els, err := tryQueryAllStream(t, conn, limit)
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	return els
}

// tryQueryAllStream is queryAllStream that returns the query's error.
func tryQueryAllStream(t *testing.T, conn *grpc.ClientConn, limit uint32) ([]*streamv1.Element, error) {
	t.Helper()
	resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
		Groups:    []string{streamGroup},
		Name:      streamName,
		TimeRange: &modelv1.TimeRange{Begin: timestamppb.New(baseTime.Add(-time.Hour)), End: timestamppb.New(baseTime.Add(time.Hour))},
		Limit:     limit,
		OrderBy:   &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_ASC},
		Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{
			{Name: "searchable", Tags: []string{"service", "instance", "labels", "codes", "started"}},
			{Name: "data", Tags: []string{"payload"}},
		}},
	})
	return resp.GetElements(), err
}

// checkStreamRoundTrip writes n elements over many entities and reads every
// acknowledged one back exactly.
func checkStreamRoundTrip(t *testing.T, conn *grpc.ClientConn, n, entities int) {
	t.Helper()
	reqs := make([]*streamv1.WriteRequest, n)
	for i := range reqs {
		reqs[i] = &streamv1.WriteRequest{Element: testElement(i, entities), MessageId: uint64(i + 1)}
		if i == 0 {
			reqs[i].Metadata = &commonv1.Metadata{Group: streamGroup, Name: streamName}
		}
	}
	statuses := writeStream(t, conn, reqs)
	if len(statuses) != n {
		t.Fatalf("got %d responses for %d messages", len(statuses), n)
	}
	for id, st := range statuses {
		if st != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("message %d: status %s", id, st)
		}
	}
	got := queryAllStream(t, conn, uint32(n+10))
	if len(got) != n {
		t.Fatalf("query returned %d elements, want %d", len(got), n)
	}
	index := make(map[string]int, n) // answered id -> i
	for i := range n {
		index[answeredID(testElement(i, entities).GetElementId())] = i
	}
	seen := make(map[int]bool, n)
	for _, el := range got {
		i, ok := index[el.GetElementId()]
		if !ok || seen[i] {
			t.Fatalf("element id %s: not one of the written elements' or answered twice", el.GetElementId())
		}
		seen[i] = true
		want := testElement(i, entities)
		if !el.GetTimestamp().AsTime().Equal(want.GetTimestamp().AsTime()) {
			t.Fatalf("element %s: got %s, want %s", want.GetElementId(), el.GetTimestamp().AsTime(), want.GetTimestamp().AsTime())
		}
		for fi, fam := range el.GetTagFamilies() {
			for ti, tag := range fam.GetTags() {
				wv := want.GetTagFamilies()[fi].GetTags()[ti]
				if !proto.Equal(tag.GetValue(), wv) {
					t.Fatalf("element %d family %s tag %s: got %v, want %v", i, fam.GetName(), tag.GetKey(), tag.GetValue(), wv)
				}
			}
		}
	}
}

func testDataPoint(i, entities int) *measurev1.DataPointValue {
	return &measurev1.DataPointValue{
		Timestamp: timestamppb.New(baseTime.Add(time.Duration(i/entities) * time.Second)),
		TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{
			str(fmt.Sprintf("svc-%d", i%entities)), str("eu"),
		}}},
		Fields: []*modelv1.FieldValue{
			{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: int64(i)}}},
			{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: float64(i) / 4}}},
			{Value: &modelv1.FieldValue_Str{Str: &modelv1.Str{Value: fmt.Sprint("n", i)}}},
			{Value: &modelv1.FieldValue_BinaryData{BinaryData: []byte{byte(i), 1}}},
		},
	}
}

// checkMeasureRoundTrip writes n points over entities series and reads
// every acknowledged one back exactly.
func checkMeasureRoundTrip(t *testing.T, conn *grpc.ClientConn, n, entities int) {
	t.Helper()
	ws, err := measurev1.NewMeasureServiceClient(conn).Write(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		req := &measurev1.WriteRequest{DataPoint: testDataPoint(i, entities), MessageId: uint64(i + 1)}
		if i == 0 {
			req.Metadata = &commonv1.Metadata{Group: measureGroup, Name: measureName}
		}
		if err := ws.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws.CloseSend(); err != nil {
		t.Fatal(err)
	}
	acked := 0
	for {
		resp, err := ws.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("message %d: %s", resp.GetMessageId(), resp.GetStatus())
		}
		acked++
	}
	if acked != n {
		t.Fatalf("%d acks for %d messages", acked, n)
	}
	resp, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), &measurev1.QueryRequest{
		Groups:          []string{measureGroup},
		Name:            measureName,
		TimeRange:       &modelv1.TimeRange{Begin: timestamppb.New(baseTime), End: timestamppb.New(baseTime.Add(24 * time.Hour))},
		Limit:           uint32(n + 10),
		TagProjection:   &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "default", Tags: []string{"service", "region"}}}},
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"count", "avg", "note", "blob"}},
	})
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	if len(resp.GetDataPoints()) != n {
		t.Fatalf("query returned %d points, want %d", len(resp.GetDataPoints()), n)
	}
	seen := map[int64]bool{}
	for _, dp := range resp.GetDataPoints() {
		i := dp.GetFields()[0].GetValue().GetInt().GetValue()
		want := testDataPoint(int(i), entities)
		if seen[i] {
			t.Fatalf("point %d returned twice", i)
		}
		seen[i] = true
		if !dp.GetTimestamp().AsTime().Equal(want.GetTimestamp().AsTime()) {
			t.Fatalf("point %d at %s, want %s", i, dp.GetTimestamp().AsTime(), want.GetTimestamp().AsTime())
		}
		for fi, f := range dp.GetFields() {
			if !proto.Equal(f.GetValue(), want.GetFields()[fi]) {
				t.Fatalf("point %d field %s: got %v want %v", i, f.GetName(), f.GetValue(), want.GetFields()[fi])
			}
		}
		for ti, tag := range dp.GetTagFamilies()[0].GetTags() {
			if !proto.Equal(tag.GetValue(), want.GetTagFamilies()[0].GetTags()[ti]) {
				t.Fatalf("point %d tag %s: got %v", i, tag.GetKey(), tag.GetValue())
			}
		}
	}
}

func timestampAfter(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t.Add(time.Second)) }
