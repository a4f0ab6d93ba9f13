package test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/banyand-io/banyand/pkg/wire"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// hostile is one piece of hostile input and the exact answer it must get.
type hostile struct {
	name  string
	check func(t *testing.T, h *hostileEnv)
}

// hostileEnv is the liaison under attack and a counter for fresh elements.
type hostileEnv struct {
	conn *grpc.ClientConn
	n    int
}

func (h *hostileEnv) element() *streamv1.ElementValue {
	h.n++
	return testElement(h.n, 7)
}

var (
	streamMD  = &commonv1.Metadata{Group: streamGroup, Name: streamName}
	measureMD = &commonv1.Metadata{Group: measureGroup, Name: measureName}
)

// Hostile input against a cluster's liaison: each case gets its exact
// status or gRPC code, and afterwards the liaison still serves a good
// write, its query and the health check.
func TestClusterHostileInput(t *testing.T) {
	c := startCluster(t, 1, 1)
	h := &hostileEnv{conn: c.liaisons[0]}
	createStreamSchema(t, h.conn, 2)
	createMeasureSchema(t, h.conn, 2)
	healthy(t, h)

	cases := append(append(hostileWrites(), hostileRaw()...), hostileQueriesAndSchemas()...)
	names := map[string]bool{}
	for _, hc := range cases {
		if names[hc.name] {
			t.Fatalf("case %q twice", hc.name)
		}
		names[hc.name] = true
		t.Run(hc.name, func(t *testing.T) {
			hc.check(t, h)
			healthy(t, h)
		})
	}
	t.Logf("%d hostile cases", len(cases))
}

// hostileWrites are well-formed protobuf with bad contents.
func hostileWrites() []hostile {
	invalid, notFound, badTS := modelv1.Status_STATUS_INVALID_ARGUMENT, modelv1.Status_STATUS_NOT_FOUND, modelv1.Status_STATUS_INVALID_TIMESTAMP
	tag := func(fi, ti int, v *modelv1.TagValue) func(*streamv1.ElementValue) {
		return func(el *streamv1.ElementValue) { el.TagFamilies[fi].Tags[ti] = v }
	}
	ts := func(sec int64, nanos int32) func(*streamv1.ElementValue) {
		return func(el *streamv1.ElementValue) { el.Timestamp = &timestamppb.Timestamp{Seconds: sec, Nanos: nanos} }
	}
	md := func(group, name string) *commonv1.Metadata { return &commonv1.Metadata{Group: group, Name: name} }
	el := func(m *commonv1.Metadata, mutate func(*streamv1.ElementValue), want modelv1.Status) func(*testing.T, *hostileEnv) {
		return func(t *testing.T, h *hostileEnv) {
			e := h.element()
			if mutate != nil {
				mutate(e)
			}
			wantStatus(t, h.conn, &streamv1.WriteRequest{Metadata: m, Element: e}, want)
		}
	}
	bin := &modelv1.TagValue{Value: &modelv1.TagValue_BinaryData{BinaryData: []byte{1, 2}}}
	intArr := &modelv1.TagValue{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: []int64{1}}}}
	manyTags := make([]*modelv1.TagValue, 10000)
	for i := range manyTags {
		manyTags[i] = str("x")
	}
	manyFamilies := make([]*modelv1.TagFamilyForWrite, 1000)
	for i := range manyFamilies {
		manyFamilies[i] = &modelv1.TagFamilyForWrite{}
	}
	return []hostile{
		{"string tag holds an int", el(streamMD, tag(0, 0, num(1)), invalid)},
		{"int tag holds binary data", el(streamMD, tag(0, 1, bin), invalid)},
		{"string-array tag holds an int array", el(streamMD, tag(0, 2, intArr), invalid)},
		{"timestamp tag holds a string", el(streamMD, tag(0, 4, str("yesterday")), invalid)},
		{"10,000 tags in one family", el(streamMD, func(e *streamv1.ElementValue) { e.TagFamilies[0].Tags = manyTags }, invalid)},
		{"1,000 tag families", el(streamMD, func(e *streamv1.ElementValue) { e.TagFamilies = manyFamilies }, invalid)},
		{"empty group name", el(md("", streamName), nil, notFound)},
		{"empty stream name", el(md(streamGroup, ""), nil, notFound)},
		{"group name with a slash", el(md(streamGroup+"/x", streamName), nil, notFound)},
		{"stream name with NUL", el(md(streamGroup, streamName+"\x00"), nil, notFound)},
		{"unknown measure group", func(t *testing.T, h *hostileEnv) {
			wantMeasureStatus(t, h.conn, &measurev1.WriteRequest{Metadata: md("nope", measureName), DataPoint: testDataPoint(1, 3)}, notFound)
		}},
		{"measure write naming a stream", func(t *testing.T, h *hostileEnv) {
			wantMeasureStatus(t, h.conn, &measurev1.WriteRequest{Metadata: streamMD, DataPoint: testDataPoint(2, 3)}, notFound)
		}},
		{"measure field of the wrong type", func(t *testing.T, h *hostileEnv) {
			dp := testDataPoint(3, 3)
			dp.Fields[0] = &modelv1.FieldValue{Value: &modelv1.FieldValue_Str{Str: &modelv1.Str{Value: "many"}}}
			wantMeasureStatus(t, h.conn, &measurev1.WriteRequest{Metadata: measureMD, DataPoint: dp}, invalid)
		}},
		{"measure with more fields than its schema", func(t *testing.T, h *hostileEnv) {
			dp := testDataPoint(4, 3)
			dp.Fields = append(dp.Fields, dp.Fields[0])
			wantMeasureStatus(t, h.conn, &measurev1.WriteRequest{Metadata: measureMD, DataPoint: dp}, invalid)
		}},
		{"timestamp 0 (1970-01-01)", el(streamMD, ts(0, 0), modelv1.Status_STATUS_SUCCEED)},
		{"negative timestamp (1969, fits int64 nanoseconds)", el(streamMD, ts(-1, 0), modelv1.Status_STATUS_SUCCEED)},
		{"timestamp before 1677", el(streamMD, ts(-1<<35, 0), badTS)},
		{"year 9999", el(streamMD, ts(253402300799, 0), badTS)},
		{"seconds beyond year 9999", el(streamMD, ts(1<<62, 0), badTS)},
		{"negative sub-millisecond nanos", el(streamMD, ts(1_700_000_000, -1), badTS)},
		{"nanos carried past the maximum", el(streamMD, ts(9_223_372_036, 2_000_000_000), badTS)},
		{"duplicate message ids on one stream", func(t *testing.T, h *hostileEnv) {
			a, b := h.element(), h.element()
			resps, err := sendStream(t, h.conn, []*streamv1.WriteRequest{
				{Metadata: streamMD, MessageId: 7, Element: a}, {MessageId: 7, Element: b}})
			if err != nil || len(resps) != 2 {
				t.Fatalf("two writes with message id 7: %d answers, %v; want 2 answers", len(resps), err)
			}
			for _, r := range resps {
				if r.GetMessageId() != 7 || r.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
					t.Errorf("answer %v, want id 7 %s", r, modelv1.Status_STATUS_SUCCEED)
				}
			}
			for _, e := range []*streamv1.ElementValue{a, b} {
				if !readable(t, h.conn, e) {
					t.Errorf("%s acknowledged but not readable", e.GetElementId())
				}
			}
		}},
		{"oversized message", func(t *testing.T, h *hostileEnv) {
			e := h.element()
			e.TagFamilies[1].Tags[0] = &modelv1.TagValue{Value: &modelv1.TagValue_BinaryData{BinaryData: make([]byte, 17<<20)}}
			_, err := sendStream(t, h.conn, []*streamv1.WriteRequest{{Metadata: streamMD, MessageId: 1, Element: e}})
			wantCode(t, err, codes.ResourceExhausted)
		}},
	}
}

// hostileRaw are bytes sent on the Write stream as they are: not
// protobuf, or protobuf Go would refuse to marshal (invalid UTF-8).
func hostileRaw() []hostile {
	good := func(id uint64, el *streamv1.ElementValue) []byte {
		b, err := proto.Marshal(&streamv1.WriteRequest{Metadata: streamMD, MessageId: id, Element: el})
		if err != nil {
			panic(err)
		}
		return b
	}
	// withBadUTF8 marshals a request holding the marker and then replaces
	// the marker with as many bytes that are not UTF-8.
	withBadUTF8 := func(h *hostileEnv, mutate func(*streamv1.WriteRequest, string)) []byte {
		const marker = "MARKER"
		req := &streamv1.WriteRequest{Metadata: proto.Clone(streamMD).(*commonv1.Metadata), MessageId: 1, Element: h.element()}
		mutate(req, marker)
		b, err := proto.Marshal(req)
		if err != nil {
			panic(err)
		}
		return bytes.Replace(b, []byte(marker), []byte("\xff\xfe\xc0\x80\xed\xa0"), 1)
	}
	// The liaison answers a frame that does not decode as grpc's typed
	// Recv would: the stream ends with INTERNAL.
	undecodable := func(frames func(h *hostileEnv) [][]byte, wantAcks int) func(*testing.T, *hostileEnv) {
		return func(t *testing.T, h *hostileEnv) {
			resps, err := sendRaw(t, h.conn, frames(h))
			wantCode(t, err, codes.Internal)
			if len(resps) != wantAcks {
				t.Errorf("%d answers before the error, want %d", len(resps), wantAcks)
			}
		}
	}
	return []hostile{
		{"invalid UTF-8 in a string tag", undecodable(func(h *hostileEnv) [][]byte {
			return [][]byte{withBadUTF8(h, func(r *streamv1.WriteRequest, m string) { r.Element.TagFamilies[0].Tags[0] = str(m) })}
		}, 0)},
		{"invalid UTF-8 in the element id", undecodable(func(h *hostileEnv) [][]byte {
			return [][]byte{withBadUTF8(h, func(r *streamv1.WriteRequest, m string) { r.Element.ElementId = m })}
		}, 0)},
		{"invalid UTF-8 in the group name", undecodable(func(h *hostileEnv) [][]byte {
			return [][]byte{withBadUTF8(h, func(r *streamv1.WriteRequest, m string) { r.Metadata.Group = m })}
		}, 0)},
		{"garbage bytes", undecodable(func(*hostileEnv) [][]byte { return [][]byte{bytes.Repeat([]byte{0xff}, 64)} }, 0)},
		{"truncated length-delimited field", undecodable(func(h *hostileEnv) [][]byte {
			b := good(1, h.element())
			return [][]byte{b[:len(b)-3]}
		}, 0)},
		{"field with the wrong wire type", undecodable(func(*hostileEnv) [][]byte {
			return [][]byte{{0x0a, 0x01, 0x08, 0x12, 0x02, 0x01}} // metadata as bytes, then element truncated
		}, 0)},
		{"acknowledged write then garbage on the same stream", func(t *testing.T, h *hostileEnv) {
			cs := openRaw(t, h.conn)
			f := good(1, h.element())
			r := new(streamv1.WriteResponse)
			if err := cs.SendMsg(&wire.Frame{Raw: f}); err != nil {
				t.Fatal(err)
			}
			if err := cs.RecvMsg(r); err != nil || r.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
				t.Fatalf("good write: %v %v", r, err)
			}
			f = []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // varint of 11 bytes
			_ = cs.SendMsg(&wire.Frame{Raw: f})
			wantCode(t, cs.RecvMsg(r), codes.Internal)
		}},
		{"zero-length frame", func(t *testing.T, h *hostileEnv) {
			resps, err := sendRaw(t, h.conn, [][]byte{{}})
			if err != nil || len(resps) != 1 || resps[0].GetStatus() != modelv1.Status_STATUS_METADATA_REQUIRED.String() {
				t.Fatalf("empty request: %v, %v; want one %s", resps, err, modelv1.Status_STATUS_METADATA_REQUIRED)
			}
		}},
	}
}

func hostileQueriesAndSchemas() []hostile {
	tr := &modelv1.TimeRange{Begin: timestamppb.New(baseTime), End: timestamppb.New(baseTime.Add(time.Hour))}
	query := func(req *streamv1.QueryRequest, want codes.Code) func(*testing.T, *hostileEnv) {
		return func(t *testing.T, h *hostileEnv) {
			_, err := streamv1.NewStreamServiceClient(h.conn).Query(ctxT(t), req)
			wantCode(t, err, want)
		}
	}
	groupCreate := func(g *commonv1.Group) func(*testing.T, *hostileEnv) {
		return func(t *testing.T, h *hostileEnv) {
			_, err := databasev1.NewGroupRegistryServiceClient(h.conn).Create(ctxT(t), &databasev1.GroupRegistryServiceCreateRequest{Group: g})
			wantCode(t, err, codes.InvalidArgument)
		}
	}
	group := func(name string, shards uint32) *commonv1.Group {
		return &commonv1.Group{Metadata: &commonv1.Metadata{Name: name}, Catalog: commonv1.Catalog_CATALOG_STREAM,
			ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards}}
	}
	streamCreate := func(md *commonv1.Metadata, family, tagName string) func(*testing.T, *hostileEnv) {
		return func(t *testing.T, h *hostileEnv) {
			_, err := databasev1.NewStreamRegistryServiceClient(h.conn).Create(ctxT(t), &databasev1.StreamRegistryServiceCreateRequest{Stream: &databasev1.Stream{
				Metadata:    md,
				TagFamilies: []*databasev1.TagFamilySpec{{Name: family, Tags: []*databasev1.TagSpec{{Name: tagName, Type: databasev1.TagType_TAG_TYPE_STRING}}}},
				Entity:      &databasev1.Entity{TagNames: []string{tagName}},
			}})
			wantCode(t, err, codes.InvalidArgument)
		}
	}
	return []hostile{
		{"criteria 10,000 levels deep", query(&streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: tr, Criteria: nested(10000)}, codes.InvalidArgument)},
		{"query of an unknown group", query(&streamv1.QueryRequest{Groups: []string{"nope"}, Name: streamName, TimeRange: tr}, codes.NotFound)},
		{"query time range beyond year 9999", query(&streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName,
			TimeRange: &modelv1.TimeRange{Begin: tr.Begin, End: &timestamppb.Timestamp{Seconds: 1 << 62}}}, codes.InvalidArgument)},
		{"measure query criteria 10,000 levels deep", func(t *testing.T, h *hostileEnv) {
			_, err := measurev1.NewMeasureServiceClient(h.conn).Query(ctxT(t), &measurev1.QueryRequest{Groups: []string{measureGroup}, Name: measureName, TimeRange: tr, Criteria: nested(10000)})
			wantCode(t, err, codes.InvalidArgument)
		}},
		{"query time range with nanos out of range", query(&streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName,
			TimeRange: &modelv1.TimeRange{Begin: &timestamppb.Timestamp{Seconds: 1, Nanos: -5}, End: tr.End}}, codes.InvalidArgument)},
		{"criteria on an unknown tag", query(&streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: tr,
			Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: "nope", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("a")}}}}, codes.InvalidArgument)},
		{"stream query with limit 2^32-1", query(&streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: tr, Limit: math.MaxUint32}, codes.InvalidArgument)},
		{"stream query with offset 2^32-1", query(&streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: tr, Offset: math.MaxUint32, Limit: 10}, codes.InvalidArgument)},
		{"measure query with limit 2^32-1", func(t *testing.T, h *hostileEnv) {
			_, err := measurev1.NewMeasureServiceClient(h.conn).Query(ctxT(t), &measurev1.QueryRequest{Groups: []string{measureGroup}, Name: measureName, TimeRange: tr, Limit: math.MaxUint32})
			wantCode(t, err, codes.InvalidArgument)
		}},
		{"binding to a missing index rule", func(t *testing.T, h *hostileEnv) {
			_, err := databasev1.NewIndexRuleBindingRegistryServiceClient(h.conn).Create(ctxT(t), &databasev1.IndexRuleBindingRegistryServiceCreateRequest{
				IndexRuleBinding: &databasev1.IndexRuleBinding{Metadata: &commonv1.Metadata{Group: streamGroup, Name: streamName}, Rules: []string{"nope"},
					Subject: &databasev1.Subject{Catalog: commonv1.Catalog_CATALOG_STREAM, Name: streamName},
					BeginAt: timestamppb.New(baseTime), ExpireAt: timestamppb.New(baseTime.Add(time.Hour))}})
			wantCode(t, err, codes.FailedPrecondition)
		}},
		{"TopN aggregation on a missing measure", func(t *testing.T, h *hostileEnv) {
			_, err := databasev1.NewTopNAggregationRegistryServiceClient(h.conn).Create(ctxT(t), &databasev1.TopNAggregationRegistryServiceCreateRequest{
				TopNAggregation: &databasev1.TopNAggregation{Metadata: &commonv1.Metadata{Group: measureGroup, Name: "top"},
					SourceMeasure: &commonv1.Metadata{Group: measureGroup, Name: "nope"}, FieldName: "value", CountersNumber: 10}})
			wantCode(t, err, codes.FailedPrecondition)
		}},
		{"create: group name with a slash", groupCreate(group("a/b", 1))},
		{"create: group name with NUL", groupCreate(group("a\x00b", 1))},
		{"create: empty group name", groupCreate(group("", 1))},
		{"create: group of 2^31 shards", groupCreate(group("huge", 1<<31))},
		{"create: stream name with NUL", streamCreate(&commonv1.Metadata{Group: streamGroup, Name: "s\x00"}, "f", "t")},
		{"create: tag name with a slash", streamCreate(&commonv1.Metadata{Group: streamGroup, Name: "s2"}, "f", "a/b")},
		{"create: empty tag family name", streamCreate(&commonv1.Metadata{Group: streamGroup, Name: "s3"}, "", "t")},
	}
}

// healthy: a good write is acknowledged and readable, and the health
// service says SERVING.
func healthy(t *testing.T, h *hostileEnv) {
	t.Helper()
	el := h.element()
	wantStatus(t, h.conn, &streamv1.WriteRequest{Metadata: streamMD, Element: el}, modelv1.Status_STATUS_SUCCEED)
	if !readable(t, h.conn, el) {
		t.Fatalf("good write %s acknowledged but not readable", el.GetElementId())
	}
	r, err := healthpb.NewHealthClient(h.conn).Check(ctxT(t), &healthpb.HealthCheckRequest{})
	if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", r.GetStatus(), err)
	}
}

// readable queries the millisecond of el's timestamp for its id.
func readable(t *testing.T, conn *grpc.ClientConn, el *streamv1.ElementValue) bool {
	t.Helper()
	at := el.GetTimestamp().AsTime()
	resp, err := streamv1.NewStreamServiceClient(conn).Query(ctxT(t), &streamv1.QueryRequest{
		Groups: []string{streamGroup}, Name: streamName,
		TimeRange:  &modelv1.TimeRange{Begin: timestamppb.New(at), End: timestamppb.New(at.Add(time.Millisecond))},
		Projection: &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{{Name: "searchable", Tags: []string{"service"}}}},
	})
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	id := answeredID(el.GetElementId())
	for _, el := range resp.GetElements() {
		if el.GetElementId() == id {
			return true
		}
	}
	return false
}

func wantCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	if status.Code(err) != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// wantStatus writes req alone on a new stream and checks its status.
func wantStatus(t *testing.T, conn *grpc.ClientConn, req *streamv1.WriteRequest, want modelv1.Status) {
	t.Helper()
	req.MessageId = 1
	resps, err := sendStream(t, conn, []*streamv1.WriteRequest{req})
	if err != nil || len(resps) != 1 || resps[0].GetMessageId() != 1 || resps[0].GetStatus() != want.String() {
		t.Fatalf("answers %v, stream error %v; want one %s", resps, err, want)
	}
}

func wantMeasureStatus(t *testing.T, conn *grpc.ClientConn, req *measurev1.WriteRequest, want modelv1.Status) {
	t.Helper()
	ws, err := measurev1.NewMeasureServiceClient(conn).Write(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	req.MessageId = 1
	if err := ws.Send(req); err != nil {
		t.Fatal(err)
	}
	_ = ws.CloseSend()
	r, err := ws.Recv()
	if err != nil || r.GetMessageId() != 1 || r.GetStatus() != want.String() {
		t.Fatalf("answer %v, %v; want %s", r, err, want)
	}
}

// sendStream sends reqs on one Write stream, closes it and returns every
// answer and the error that ended the stream (nil for a clean end).
func sendStream(t *testing.T, conn *grpc.ClientConn, reqs []*streamv1.WriteRequest) ([]*streamv1.WriteResponse, error) {
	t.Helper()
	ws, err := streamv1.NewStreamServiceClient(conn).Write(ctxT(t))
	return sendAll(t, ws, err, reqs)
}

// writeMeasures is sendStream for data points.
func writeMeasures(t *testing.T, conn *grpc.ClientConn, reqs []*measurev1.WriteRequest) ([]*measurev1.WriteResponse, error) {
	t.Helper()
	ws, err := measurev1.NewMeasureServiceClient(conn).Write(ctxT(t))
	return sendAll(t, ws, err, reqs)
}

// writeMeasuresOK writes reqs on one stream and fails the test unless
// every one is acknowledged as a success.
func writeMeasuresOK(t *testing.T, conn *grpc.ClientConn, reqs []*measurev1.WriteRequest) {
	t.Helper()
	resps, err := writeMeasures(t, conn, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resps {
		if r.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
			t.Fatalf("write %d: %s", r.GetMessageId(), r.GetStatus())
		}
	}
	if len(resps) != len(reqs) {
		t.Fatalf("%d of %d writes answered", len(resps), len(reqs))
	}
}

func sendAll[Req, Resp any](t *testing.T, ws grpc.BidiStreamingClient[Req, Resp], err error, reqs []*Req) ([]*Resp, error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := ws.Send(r); err != nil {
			break // the stream ended: Recv says why
		}
	}
	_ = ws.CloseSend()
	var out []*Resp
	for {
		r, err := ws.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}

// openRaw opens a stream Write call that sends []byte frames as they are.
func openRaw(t *testing.T, conn *grpc.ClientConn) grpc.ClientStream {
	t.Helper()
	desc := &grpc.StreamDesc{StreamName: "Write", ClientStreams: true, ServerStreams: true}
	cs, err := conn.NewStream(ctxT(t), desc, streamv1.StreamService_Write_FullMethodName, grpc.ForceCodecV2(wire.Codec()))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// sendRaw sends frames on a stream Write call as they are.
func sendRaw(t *testing.T, conn *grpc.ClientConn, frames [][]byte) ([]*streamv1.WriteResponse, error) {
	t.Helper()
	cs := openRaw(t, conn)
	for _, f := range frames {
		if err := cs.SendMsg(&wire.Frame{Raw: f}); err != nil {
			break
		}
	}
	_ = cs.CloseSend()
	var out []*streamv1.WriteResponse
	for {
		r := new(streamv1.WriteResponse)
		err := cs.RecvMsg(r)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}
