//go:build faults

package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
)

const (
	traceGroup    = "faulttraces"
	traceName     = "spans"
	spansPerTrace = 4
	// traceChunk and tracePage: a read-back query covers traceChunk ms of
	// span timestamps (entities spans a ms: ~1250 traces) and asks for
	// tracePage traces; a full page means a bad chunking.
	traceChunk = 250
	tracePage  = 2500
)

// The trace load writes spans of spansPerTrace each, seq s in trace
// s/spansPerTrace, its span id the seq; a message's version is its id on
// its Write stream, which the answer echoes.
func openSpanStream(conn *grpc.ClientConn) func(context.Context, *load) (writeStream, error) {
	client := tracev1.NewTraceServiceClient(conn)
	md := &commonv1.Metadata{Group: traceGroup, Name: traceName}
	return func(ctx context.Context, l *load) (writeStream, error) {
		ws, err := client.Write(ctx)
		if err != nil {
			return nil, err
		}
		return &spanStream{TraceService_WriteClient: ws, l: l, md: md}, nil
	}
}

type spanStream struct {
	tracev1.TraceService_WriteClient
	l  *load
	md *commonv1.Metadata
}

func str(s string) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: s}}}
}

func (l *load) traceID(seq int64) string {
	return l.runID + "-t" + strconv.FormatInt(seq/spansPerTrace, 10)
}

func spanRequest(md *commonv1.Metadata, traceID, spanID string, ms int64, service string, version uint64) *tracev1.WriteRequest {
	return &tracev1.WriteRequest{Metadata: md, Version: version, Span: []byte("span " + spanID), Tags: []*modelv1.TagValue{
		str(traceID), str(spanID), {Value: &modelv1.TagValue_Timestamp{Timestamp: msTimestamp(ms)}}, str(service),
	}}
}

func (s *spanStream) send(seq int64, id uint64) error {
	return s.Send(spanRequest(s.md, s.l.traceID(seq), s.l.elementID(seq), s.l.millis(seq), "svc-"+strconv.FormatInt(seq%entities, 10), id))
}

func (s *spanStream) recv() (uint64, string, error) {
	r, err := s.Recv()
	return r.GetVersion(), r.GetStatus(), err
}

func createTraceGroup(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	day := &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 1}
	if _, err := databasev1.NewGroupRegistryServiceClient(conn).Create(ctx, &databasev1.GroupRegistryServiceCreateRequest{Group: &commonv1.Group{
		Metadata:     &commonv1.Metadata{Name: traceGroup},
		Catalog:      commonv1.Catalog_CATALOG_TRACE,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: shards, SegmentInterval: day, Ttl: &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: 7}},
	}}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	s := databasev1.TagType_TAG_TYPE_STRING
	if _, err := databasev1.NewTraceRegistryServiceClient(conn).Create(ctx, &databasev1.TraceRegistryServiceCreateRequest{Trace: &databasev1.Trace{
		Metadata: &commonv1.Metadata{Group: traceGroup, Name: traceName},
		Tags: []*databasev1.TraceTagSpec{
			{Name: "trace_id", Type: s}, {Name: "span_id", Type: s},
			{Name: "ts", Type: databasev1.TagType_TAG_TYPE_TIMESTAMP}, {Name: "service", Type: s},
		},
		TraceIdTagName: "trace_id", SpanIdTagName: "span_id", TimestampTagName: "ts",
	}}); err != nil {
		t.Fatalf("create trace: %v", err)
	}
}

// waitSpanWritable polls probe spans (a trace the read-back skips) until
// one is acknowledged.
func waitSpanWritable(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	client := tracev1.NewTraceServiceClient(conn)
	md := &commonv1.Metadata{Group: traceGroup, Name: traceName}
	deadline := time.Now().Add(probeLimit)
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		ws, err := client.Write(ctx)
		var r *tracev1.WriteResponse
		if err == nil {
			if err = ws.Send(spanRequest(md, "probe", strconv.Itoa(i), time.Now().UnixMilli(), "probe", 1)); err == nil {
				_ = ws.CloseSend()
				r, err = ws.Recv()
			}
		}
		cancel()
		if err == nil && r.GetStatus() == statusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no probe span acknowledged within %s; last answer: %v %v", probeLimit, r, err)
		}
		time.Sleep(pollInterval)
	}
}

// readSpans reads every trace of the run back, a time chunk at a time,
// and counts how many times each span (seq) was read; a trace met in two
// chunks (its spans straddle the boundary) is counted once.
func (l *load) readSpans(conn *grpc.ClientConn, n int64) (map[int64]int, error) {
	client := tracev1.NewTraceServiceClient(conn)
	seen := map[int64]int{}
	traces := map[string]bool{}
	last := l.millis(n) + 1
	for from := l.base; from < last; from += traceChunk {
		to := min(from+traceChunk, last)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		resp, err := client.Query(ctx, &tracev1.QueryRequest{
			Groups: []string{traceGroup}, Name: traceName,
			TimeRange: &modelv1.TimeRange{Begin: msTimestamp(from), End: msTimestamp(to - 1)},
			Limit:     tracePage,
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("query traces [%d, %d) ms: %w", from, to, err)
		}
		if len(resp.GetTraces()) >= tracePage {
			return nil, status.Errorf(codes.Internal, "query traces [%d, %d) ms returned a full page of %d", from, to, tracePage)
		}
		for _, tr := range resp.GetTraces() {
			if traces[tr.GetTraceId()] || !strings.HasPrefix(tr.GetTraceId(), l.runID) {
				continue
			}
			traces[tr.GetTraceId()] = true
			for _, sp := range tr.GetSpans() {
				if seq := l.seqOf(sp.GetSpanId()); seq >= 0 && tr.GetTraceId() == l.traceID(seq) && string(sp.GetSpan()) == "span "+sp.GetSpanId() {
					seen[seq]++
				}
			}
		}
	}
	return seen, nil
}

// A data node is killed with SIGKILL under a span load and restarted with
// the same name and data path. Nothing acknowledged is lost, no span is
// read twice.
func TestKillDataNodeUnderSpanLoad(t *testing.T) {
	c := newCluster(t)
	nodes := []*dataNode{c.newDataNode(0), c.newDataNode(1)}
	lia := c.newLiaison()
	conn := dial(t, lia.addr)
	createTraceGroup(t, conn)
	waitSpanWritable(t, conn)
	ld := startLoadWith(t, conn, loadOpts{open: openSpanStream(conn)})
	ld.waitAcked(warmAcks, startupAcks)

	killedAt, restartAt, outs := killAndRestart(t, c, nodes[1], ld)

	res := verifyOutcomes(t, outs, func() (map[int64]int, error) { return ld.readSpans(conn, int64(len(outs))) })
	t.Logf("kill -9 data node under spans: %s", res)
	survivor, err := ackedBetween(outs, killedAt, restartAt)
	t.Logf("spans sent after the kill and acknowledged before the restart: %d", survivor)
	if err != nil {
		t.Errorf("no span succeeded on the survivor while %s was down", nodes[1].name)
	}
	checkNoLossNoDup(t, res)
}
