package test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/internal/poll"
)

const traceGroup = "traces"

// createTraceSchema makes a trace group of shards and replicas with the
// schema of OAP's segments ("segment").
func createTraceSchema(t *testing.T, conn *grpc.ClientConn, shards, replicas uint32) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata: &commonv1.Metadata{Name: traceGroup},
		Catalog:  commonv1.Catalog_CATALOG_TRACE,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards, Replicas: replicas,
			SegmentInterval: &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}, Ttl: &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 7}},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	tr, _, _ := oapSegmentTrace()
	tr.Metadata.Group = traceGroup
	if _, err := databasev1.NewTraceRegistryServiceClient(conn).Create(ctx, &databasev1.TraceRegistryServiceCreateRequest{Trace: tr}); err != nil {
		t.Fatalf("create trace schema: %v", err)
	}
}

func TestTraces(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		conn, _ := startStandalone(t, t.TempDir())
		createTraceSchema(t, conn, 2, 0)
		createStreamSchema(t, conn, 1)
		checkTraceBadInput(t, conn)
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 2, 1)
		createTraceSchema(t, c.liaisons[0], 2, 0)
		createStreamSchema(t, c.liaisons[0], 1)
		checkTraceBadInput(t, c.liaisons[0])
	})
}

// checkTraceBadInput sends bad spans between good ones on one Write
// stream: each gets its own clear status, in order, the stream goes on,
// and only the good spans are read back. Bad queries get a clear code.
func checkTraceBadInput(t *testing.T, conn *grpc.ClientConn) {
	ctx := ctxT(t)
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	good := func(j int) *tracev1.WriteRequest {
		w := oapSegment(traceGroup, 7, j, start)
		return w.build(true)
	}
	// The tag spec of the first message stays in force: bad spans are
	// values only, in its (alphabetical) order.
	bad := func(mut func(tags map[string]*modelv1.TagValue)) *tracev1.WriteRequest {
		w := oapSegment(traceGroup, 8, 0, start)
		mut(w.tags)
		req := w.build(false)
		req.Metadata = w.md
		return req
	}
	null := &modelv1.TagValue{Value: &modelv1.TagValue_Null{}}
	big := good(1)
	big.Span = bytes.Repeat([]byte{'x'}, schema.MaxSpanBytes+1)
	cases := []struct {
		what string
		req  *tracev1.WriteRequest
		want modelv1.Status
	}{
		{"good span 0 (tag spec)", good(0), modelv1.Status_STATUS_SUCCEED},
		{"no trace id", bad(func(tags map[string]*modelv1.TagValue) { tags["trace_id"] = null }), modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"no span id", bad(func(tags map[string]*modelv1.TagValue) { tags["segment_id"] = null }), modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"no timestamp", bad(func(tags map[string]*modelv1.TagValue) { tags["start_time"] = null }), modelv1.Status_STATUS_INVALID_TIMESTAMP},
		{"wrong tag type", bad(func(tags map[string]*modelv1.TagValue) { tags["latency"] = strValue("slow") }), modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"a tag the spec does not name", bad(func(tags map[string]*modelv1.TagValue) { tags["zzz"] = strValue("extra") }), modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"span over the size limit", big, modelv1.Status_STATUS_INVALID_ARGUMENT},
		{"trace write to a stream's group", &tracev1.WriteRequest{Metadata: &commonv1.Metadata{Group: streamGroup, Name: streamName},
			Tags: good(2).GetTags(), Version: 1}, modelv1.Status_STATUS_NOT_FOUND},
		{"unknown group", &tracev1.WriteRequest{Metadata: &commonv1.Metadata{Group: "nope", Name: "segment"},
			Tags: good(2).GetTags(), Version: 1}, modelv1.Status_STATUS_NOT_FOUND},
		{"good span 2 (spec still in force)", good(2), modelv1.Status_STATUS_SUCCEED},
	}
	ws, err := tracev1.NewTraceServiceClient(conn).Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		if err := ws.Send(tc.req); err != nil {
			t.Fatalf("send %s: %v", tc.what, err)
		}
		resp, err := ws.Recv()
		if err != nil {
			t.Fatalf("%s: the stream ended: %v", tc.what, err)
		}
		if resp.GetStatus() != tc.want.String() || resp.GetVersion() != tc.req.GetVersion() {
			t.Errorf("%s: answered %s version %d, want %s version %d", tc.what, resp.GetStatus(), resp.GetVersion(), tc.want, tc.req.GetVersion())
		}
		if md := tc.req.GetMetadata(); md != nil && !proto.Equal(resp.GetMetadata(), md) {
			t.Errorf("%s: answered metadata %v, want %v", tc.what, resp.GetMetadata(), md)
		}
	}
	if err := ws.CloseSend(); err != nil {
		t.Fatal(err)
	}

	// A stream without a tag spec sends values in the schema's order.
	one := oapSegment(traceGroup, 7, 1, start)
	plain := &tracev1.WriteRequest{Metadata: one.md, Span: one.span, Version: 1}
	for _, name := range segmentTags {
		plain.Tags = append(plain.Tags, one.tags[name])
	}
	plainWS, err := tracev1.NewTraceServiceClient(conn).Write(ctx)
	if answers, err := sendAll(t, plainWS, err, []*tracev1.WriteRequest{plain}); err != nil ||
		len(answers) != 1 || answers[0].GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
		t.Fatalf("schema-order span: %v (%v)", answers, err)
	}

	// Nothing of the bad spans was stored: every trace of the group is
	// trace-007 with its three good spans.
	c := tracev1.NewTraceServiceClient(conn)
	resp, err := c.Query(ctx, &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Limit: 100, TagProjection: segmentTags})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetTraces()) != 1 {
		t.Fatalf("read %d traces, want 1: %v", len(resp.GetTraces()), resp)
	}
	checkTrace(t, "after bad input", resp.GetTraces()[0], []*oapTraceWrite{oapSegment(traceGroup, 7, 0, start), one, oapSegment(traceGroup, 7, 2, start)}, segmentTags)

	unknown := eqCond("color", strValue("red"))
	for _, tc := range []struct {
		what string
		req  *tracev1.QueryRequest
		want codes.Code
	}{
		{"criteria on an unknown tag", &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Criteria: unknown}, codes.InvalidArgument},
		{"projection of an unknown tag", &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", TagProjection: []string{"color"}}, codes.InvalidArgument},
		{"order by an unknown rule", &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", OrderBy: &modelv1.QueryOrder{IndexRuleName: "color"}}, codes.InvalidArgument},
		{"order by a string tag", &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", OrderBy: &modelv1.QueryOrder{IndexRuleName: "service_id"}}, codes.InvalidArgument},
		{"no groups", &tracev1.QueryRequest{Name: "segment"}, codes.InvalidArgument},
		{"half a time range", &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", TimeRange: &modelv1.TimeRange{Begin: oapTimestamp(start)}}, codes.InvalidArgument},
		{"a stream's group", &tracev1.QueryRequest{Groups: []string{streamGroup}, Name: "segment"}, codes.FailedPrecondition},
		{"unknown trace", &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "nope"}, codes.NotFound},
		{"a window too large", &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Limit: schema.MaxQueryWindow + 1}, codes.InvalidArgument},
		{"criteria nested too deep", &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Criteria: nested(100)}, codes.InvalidArgument},
	} {
		_, err := c.Query(ctx, tc.req)
		if status.Code(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.what, err, tc.want)
		}
	}
	// And the good data reads the same after all of it.
	resp, err = c.Query(ctx, &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Criteria: eqCond("trace_id", strValue("trace-007"))})
	if err != nil || len(resp.GetTraces()) != 1 || len(resp.GetTraces()[0].GetSpans()) != 3 {
		t.Fatalf("trace-007 after bad queries: %v (%v)", resp, err)
	}
	var ids []string
	for _, sp := range resp.GetTraces()[0].GetSpans() {
		ids = append(ids, sp.GetSpanId())
	}
	if !slices.Equal(ids, []string{"trace-007.seg-0", "trace-007.seg-1", "trace-007.seg-2"}) {
		t.Errorf("trace-007's spans, by time: %v", ids)
	}
}

// With replicas = 1 on three data nodes, every trace stays readable, each
// with all its spans and none twice, with one node stopped.
func TestClusterTracesReadableWhenANodeStops(t *testing.T) {
	c := startCluster(t, 3, 1)
	conn := c.liaisons[0]
	createTraceSchema(t, conn, 4, 1)
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var writes []*oapTraceWrite
	byTrace := map[string][]*oapTraceWrite{}
	for i := range 30 {
		for j := range 1 + i%4 {
			w := oapSegment(traceGroup, i, j, start)
			writes = append(writes, w)
			byTrace[w.traceID] = append(byTrace[w.traceID], w)
		}
	}
	res, err := flushTraces(conn, writes)
	checkFlush(t, "spans", res, err, len(writes))
	tc := tracev1.NewTraceServiceClient(conn)
	readAll := func() error {
		resp, err := tc.Query(ctxT(t), &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Limit: 100})
		if err != nil {
			return err
		}
		if len(resp.GetTraces()) != len(byTrace) {
			return fmt.Errorf("read %d traces, want %d", len(resp.GetTraces()), len(byTrace))
		}
		for _, tr := range resp.GetTraces() {
			if want := len(byTrace[tr.GetTraceId()]); len(tr.GetSpans()) != want {
				return fmt.Errorf("trace %s: %d spans, want %d", tr.GetTraceId(), len(tr.GetSpans()), want)
			}
		}
		return nil
	}
	if err := readAll(); err != nil {
		t.Fatal(err)
	}
	c.data[0].stop(t)
	var last error
	poll.Within(t, 20*time.Second, "every trace readable with one of three nodes stopped", func() bool {
		last = readAll()
		return last == nil
	})
	if last != nil {
		t.Fatal(last)
	}
	for _, id := range []string{"trace-003", "trace-029"} {
		resp, err := tc.Query(ctxT(t), &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Criteria: eqCond("trace_id", strValue(id)), TagProjection: segmentTags})
		if err != nil || len(resp.GetTraces()) != 1 {
			t.Fatalf("trace %s with a node stopped: %v (%v)", id, resp, err)
		}
		checkTrace(t, id+" with a node stopped", resp.GetTraces()[0], byTrace[id], segmentTags)
	}
}

// MATCH on a trace tag analyzes with the analyzer of the index rule bound
// to the trace (the url analyzer here, on endpoint_id =
// "svc-N/endpoint-(i%3)"); a tag no rule analyzes is InvalidArgument.
func TestTraceMatch(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createTraceSchema(t, conn, 2, 0)
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var writes []*oapTraceWrite
	for i := range 30 {
		writes = append(writes, oapSegment(traceGroup, i, 0, start))
	}
	res, err := flushTraces(conn, writes)
	checkFlush(t, "spans", res, err, len(writes))
	ctx := ctxT(t)
	if _, err := databasev1.NewIndexRuleRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleRegistryServiceCreateRequest{IndexRule: &databasev1.IndexRule{
		Metadata: &commonv1.Metadata{Group: traceGroup, Name: "endpoint_url"}, Tags: []string{"endpoint_id"}, Type: databasev1.IndexRule_TYPE_INVERTED, Analyzer: "url",
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := databasev1.NewIndexRuleBindingRegistryServiceClient(conn).Create(ctx, &databasev1.IndexRuleBindingRegistryServiceCreateRequest{IndexRuleBinding: &databasev1.IndexRuleBinding{
		Metadata: &commonv1.Metadata{Group: traceGroup, Name: "segment-match"}, Rules: []string{"endpoint_url"},
		Subject: &databasev1.Subject{Catalog: commonv1.Catalog_CATALOG_TRACE, Name: "segment"},
		BeginAt: timestamppb.New(start.Add(-time.Hour)), ExpireAt: timestamppb.New(start.Add(24 * time.Hour)),
	}}); err != nil {
		t.Fatal(err)
	}
	match := func(tag, text string) (*tracev1.QueryResponse, error) {
		return tracev1.NewTraceServiceClient(conn).Query(ctxT(t), &tracev1.QueryRequest{Groups: []string{traceGroup}, Name: "segment", Limit: 100,
			Criteria: &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{
				Name: tag, Op: modelv1.Condition_BINARY_OP_MATCH, Value: strValue(text),
				MatchOption: &modelv1.Condition_MatchOption{Operator: modelv1.Condition_MatchOption_OPERATOR_AND},
			}}}})
	}
	resp, err := match("endpoint_id", "endpoint 2")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetTraces()); n != 10 {
		t.Errorf("MATCH endpoint_id [endpoint 2]: %d traces, want the 10 with i%%3 = 2", n)
	}
	if _, err := match("service_instance_id", "svc"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("MATCH on a tag no rule analyzes: %v, want InvalidArgument", err)
	}
}
