package test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// Every bad message gets its own status, the stream goes on, and what was
// acknowledged before is still there afterwards.
func TestStandaloneBadStreamWrites(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createStreamSchema(t, conn, 2)
	md := &commonv1.Metadata{Group: streamGroup, Name: streamName}

	good := func(i int) *streamv1.ElementValue { return testElement(i, 7) }
	withTags := func(i int, mutate func(el *streamv1.ElementValue)) *streamv1.ElementValue {
		el := good(i)
		mutate(el)
		return el
	}
	cases := []struct {
		name string
		req  *streamv1.WriteRequest
		want modelv1.Status
	}{
		{"no metadata on the first message", &streamv1.WriteRequest{Element: good(0)}, modelv1.Status_STATUS_METADATA_REQUIRED},
		{"good write sets metadata", &streamv1.WriteRequest{Metadata: md, Element: good(1)}, modelv1.Status_STATUS_SUCCEED},
		{"good write reuses metadata", &streamv1.WriteRequest{Element: good(2)}, modelv1.Status_STATUS_SUCCEED},
		{"unknown group", &streamv1.WriteRequest{Metadata: &commonv1.Metadata{Group: "nope", Name: streamName}, Element: good(3)}, modelv1.Status_STATUS_NOT_FOUND},
		{"unknown stream", &streamv1.WriteRequest{Metadata: &commonv1.Metadata{Group: streamGroup, Name: "nope"}, Element: good(4)}, modelv1.Status_STATUS_NOT_FOUND},
		{"missing timestamp", &streamv1.WriteRequest{Metadata: md, Element: withTags(5, func(el *streamv1.ElementValue) { el.Timestamp = nil })}, modelv1.Status_STATUS_INVALID_TIMESTAMP},
		{"timestamp beyond 2262", &streamv1.WriteRequest{Element: withTags(6, func(el *streamv1.ElementValue) { el.Timestamp = &timestamppb.Timestamp{Seconds: 1 << 40} })}, modelv1.Status_STATUS_INVALID_TIMESTAMP},
		{"sub-millisecond timestamp", &streamv1.WriteRequest{Element: withTags(7, func(el *streamv1.ElementValue) { el.Timestamp.Nanos = 1 })}, modelv1.Status_STATUS_INVALID_TIMESTAMP},
		{"no element", &streamv1.WriteRequest{}, modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"missing entity tags", &streamv1.WriteRequest{Element: withTags(8, func(el *streamv1.ElementValue) { el.TagFamilies = nil })}, modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"null entity tag", &streamv1.WriteRequest{Element: withTags(9, func(el *streamv1.ElementValue) { el.TagFamilies[0].Tags[0] = &modelv1.TagValue{} })}, modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"wrong tag type", &streamv1.WriteRequest{Element: withTags(10, func(el *streamv1.ElementValue) { el.TagFamilies[0].Tags[1] = str("not an int") })}, modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"too many tag families", &streamv1.WriteRequest{Element: withTags(11, func(el *streamv1.ElementValue) {
			el.TagFamilies = append(el.TagFamilies, &modelv1.TagFamilyForWrite{})
		})}, modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"too many tags", &streamv1.WriteRequest{Element: withTags(12, func(el *streamv1.ElementValue) {
			el.TagFamilies[1].Tags = append(el.TagFamilies[1].Tags, str("extra"))
		})}, modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"expired schema revision", &streamv1.WriteRequest{Metadata: &commonv1.Metadata{Group: streamGroup, Name: streamName, ModRevision: 1 << 50}, Element: good(13)}, modelv1.Status_STATUS_EXPIRED_SCHEMA},
		{"good write after all that", &streamv1.WriteRequest{Metadata: md, Element: good(14)}, modelv1.Status_STATUS_SUCCEED},
	}
	reqs := make([]*streamv1.WriteRequest, len(cases))
	for i, c := range cases {
		c.req.MessageId = uint64(i + 1)
		reqs[i] = c.req
	}
	statuses := writeStream(t, conn, reqs)
	for i, c := range cases {
		if got := statuses[uint64(i+1)]; got != c.want.String() {
			t.Errorf("%s: status %q, want %s", c.name, got, c.want)
		}
	}
	got := queryAllStream(t, conn, 100)
	var ids []string
	for _, el := range got {
		ids = append(ids, el.GetElementId())
	}
	if want := answeredIDs("el-00001", "el-00002", "el-00014"); !slices.Equal(ids, want) {
		t.Fatalf("readable elements %v, want exactly the three acknowledged ones %v", ids, want)
	}
}

// A message over the gRPC size limit ends that stream with
// RESOURCE_EXHAUSTED; the server keeps serving and keeps the data.
func TestStandaloneOversizedMessage(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createStreamSchema(t, conn, 2)
	md := &commonv1.Metadata{Group: streamGroup, Name: streamName}
	if st := writeStream(t, conn, []*streamv1.WriteRequest{{Metadata: md, Element: testElement(1, 3), MessageId: 1}}); st[1] != modelv1.Status_STATUS_SUCCEED.String() {
		t.Fatalf("good write: %v", st)
	}

	ws, err := streamv1.NewStreamServiceClient(conn).Write(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	huge := testElement(2, 3)
	huge.TagFamilies[1].Tags[0].Value = &modelv1.TagValue_BinaryData{BinaryData: make([]byte, 17<<20)}
	_ = ws.Send(&streamv1.WriteRequest{Metadata: md, Element: huge, MessageId: 2})
	_, err = ws.Recv()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("oversized message: got %v, want RESOURCE_EXHAUSTED", err)
	}

	if st := writeStream(t, conn, []*streamv1.WriteRequest{{Metadata: md, Element: testElement(3, 3), MessageId: 3}}); st[3] != modelv1.Status_STATUS_SUCCEED.String() {
		t.Fatalf("write after the oversized one: %v", st)
	}
	if n := len(queryAllStream(t, conn, 10)); n != 2 {
		t.Fatalf("%d elements readable, want 2", n)
	}
}

// Queries with bad arguments get gRPC codes a client can act on.
func TestStandaloneBadQueries(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createStreamSchema(t, conn, 2)
	client := streamv1.NewStreamServiceClient(conn)
	tr := &modelv1.TimeRange{Begin: timestamppb.New(baseTime), End: timestamppb.New(baseTime.Add(time.Hour))}
	cases := []struct {
		name string
		req  *streamv1.QueryRequest
		want codes.Code
	}{
		{"no groups", &streamv1.QueryRequest{Name: streamName, TimeRange: tr}, codes.InvalidArgument},
		{"no time range", &streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName}, codes.InvalidArgument},
		{"sub-millisecond time range", &streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: &modelv1.TimeRange{
			Begin: &timestamppb.Timestamp{Seconds: 1, Nanos: 1}, End: tr.End,
		}}, codes.InvalidArgument},
		{"unknown stream", &streamv1.QueryRequest{Groups: []string{streamGroup}, Name: "nope", TimeRange: tr}, codes.NotFound},
		{"order by index rule", &streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: tr, OrderBy: &modelv1.QueryOrder{IndexRuleName: "x"}}, codes.InvalidArgument},
		{"match criteria", &streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: tr, Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: "service", Op: modelv1.Condition_BINARY_OP_MATCH, Value: str("x")}}}}, codes.InvalidArgument},
		{"deeply nested criteria", &streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: tr, Criteria: nested(1000)}, codes.InvalidArgument},
		{"having on a scalar tag", &streamv1.QueryRequest{Groups: []string{streamGroup}, Name: streamName, TimeRange: tr, Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
			Name: "service", Op: modelv1.Condition_BINARY_OP_HAVING, Value: &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"a"}}}},
		}}}}, codes.InvalidArgument},
	}
	for _, c := range cases {
		_, err := client.Query(ctxT(t), c.req)
		if status.Code(err) != c.want {
			t.Errorf("%s: got %v, want %s", c.name, err, c.want)
		}
	}
}

func nested(depth int) *modelv1.Criteria {
	leaf := func() *modelv1.Criteria {
		return &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: "service", Op: modelv1.Condition_BINARY_OP_EQ, Value: str("a")}}}
	}
	c := leaf()
	for range depth {
		// A chain, not a shared subtree: sharing would make the message
		// exponentially large when marshalled.
		c = &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{Op: modelv1.LogicalExpression_LOGICAL_OP_AND, Left: c, Right: leaf()}}}
	}
	return c
}
