package test

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
)

// The trace half of the OAP-shaped client: TraceWrite through the
// TraceBulkWriteProcessor (tags in a TreeMap, so by name; a tag spec with
// the metadata when (group, name) changes, values only after; version 1,
// TraceWrite's default) and BanyanDBTraceQueryDAO's reads.

// oapTraceWrite is a TraceWrite of one segment.
type oapTraceWrite struct {
	md      *commonv1.Metadata
	traceID string
	tags    map[string]*modelv1.TagValue
	span    []byte
	version uint64
}

func (w *oapTraceWrite) metadata() *commonv1.Metadata { return w.md }

func (w *oapTraceWrite) build(full bool) *tracev1.WriteRequest {
	req := &tracev1.WriteRequest{Span: w.span, Version: w.version}
	spec := &tracev1.TagSpec{}
	for _, name := range sortedKeys(w.tags) {
		spec.TagNames = append(spec.TagNames, name)
		req.Tags = append(req.Tags, w.tags[name])
	}
	if full {
		req.Metadata, req.TagSpec = w.md, spec
	}
	return req
}

func flushTraces(conn *grpc.ClientConn, writes []*oapTraceWrite) (flushResult, error) {
	return oapFlush(tracev1.NewTraceServiceClient(conn).Write,
		func(r *tracev1.WriteResponse) (uint64, string) { return r.GetVersion(), r.GetStatus() }, writes)
}

func strValue(v string) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: v}}}
}

func intValue(v int64) *modelv1.TagValue {
	return &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: v}}}
}

// oapSegment is segment j of trace i: services alternate, so a trace has
// segments of both; the span bytes are ~500 random bytes (a SpanWrapper).
func oapSegment(group string, i, j int, start time.Time) *oapTraceWrite {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(j)))
	span := make([]byte, 480+rng.IntN(64))
	for k := range span {
		span[k] = byte(rng.Uint32())
	}
	svc := fmt.Sprintf("svc-%d", (i+j)%2)
	traceID := fmt.Sprintf("trace-%03d", i)
	return &oapTraceWrite{
		md:      &commonv1.Metadata{Group: group, Name: "segment"},
		traceID: traceID,
		span:    span,
		version: 1,
		tags: map[string]*modelv1.TagValue{
			"segment_id":          strValue(fmt.Sprintf("%s.seg-%d", traceID, j)),
			"trace_id":            strValue(traceID),
			"service_id":          strValue(svc),
			"service_instance_id": strValue(svc + "-inst"),
			"endpoint_id":         strValue(fmt.Sprintf("%s/endpoint-%d", svc, i%3)),
			"start_time":          {Value: &modelv1.TagValue_Timestamp{Timestamp: oapTimestamp(start.Add(time.Duration(i*10+j) * time.Millisecond))}},
			"latency":             intValue(int64((i*37 + j*11) % 500)),
			"is_error":            intValue(int64(i % 2)),
			"tags":                {Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"http.method=GET", fmt.Sprintf("n=%d", j)}}}},
		},
	}
}

// oapTraceData writes traces traces of 1..4 segments in two concurrent
// flushes, as OAP's bulk processor with concurrency 2, and returns them by
// trace id.
func oapTraceData(t *testing.T, conn *grpc.ClientConn, group string, traces int, start time.Time) map[string][]*oapTraceWrite {
	t.Helper()
	byTrace := map[string][]*oapTraceWrite{}
	var flushes [2][]*oapTraceWrite
	for i := range traces {
		for j := range 1 + i%4 {
			w := oapSegment(group, i, j, start)
			byTrace[w.traceID] = append(byTrace[w.traceID], w)
			flushes[(i+j)%2] = append(flushes[(i+j)%2], w)
		}
	}
	var wg sync.WaitGroup
	for f, writes := range flushes {
		wg.Go(func() {
			res, err := flushTraces(conn, writes)
			checkFlush(t, fmt.Sprintf("trace flush %d", f), res, err, len(writes))
		})
	}
	wg.Wait()
	return byTrace
}

var segmentTags = []string{"segment_id", "trace_id", "service_id", "service_instance_id", "endpoint_id", "start_time", "latency", "is_error", "tags"}

// checkTrace checks that got holds exactly want's segments, each span's
// bytes and id, and every projected tag read back by name.
func checkTrace(t *testing.T, what string, got *tracev1.Trace, want []*oapTraceWrite, projected []string) {
	t.Helper()
	if len(want) == 0 || got.GetTraceId() != want[0].traceID {
		t.Errorf("%s: trace %q, want %q", what, got.GetTraceId(), want[0].traceID)
		return
	}
	if len(got.GetSpans()) != len(want) {
		t.Errorf("%s: trace %s has %d spans, want %d", what, got.GetTraceId(), len(got.GetSpans()), len(want))
	}
	bySpan := map[string]*oapTraceWrite{}
	for _, w := range want {
		bySpan[w.tags["segment_id"].GetStr().GetValue()] = w
	}
	for _, sp := range got.GetSpans() {
		w := bySpan[sp.GetSpanId()]
		if w == nil {
			t.Errorf("%s: unexpected or repeated span %q", what, sp.GetSpanId())
			continue
		}
		delete(bySpan, sp.GetSpanId())
		if !bytes.Equal(sp.GetSpan(), w.span) {
			t.Errorf("%s: span %s: bytes differ (%d read, %d written)", what, sp.GetSpanId(), len(sp.GetSpan()), len(w.span))
		}
		if len(sp.GetTags()) != len(projected) {
			t.Errorf("%s: span %s: %d tags, want %d", what, sp.GetSpanId(), len(sp.GetTags()), len(projected))
		}
		for _, tag := range sp.GetTags() {
			if !slices.Contains(projected, tag.GetKey()) || !proto.Equal(tag.GetValue(), w.tags[tag.GetKey()]) {
				t.Errorf("%s: span %s: tag %s = %v, want %v", what, sp.GetSpanId(), tag.GetKey(), tag.GetValue(), w.tags[tag.GetKey()])
			}
		}
	}
}

// expectTraces is the reference for a segment-list query: traces with a
// segment that matches, by the best order value of their matching
// segments (then trace id), paged.
func expectTraces(byTrace map[string][]*oapTraceWrite, match func(*oapTraceWrite) bool, key func(*oapTraceWrite) int64, desc bool, offset, limit int) []string {
	type ranked struct {
		id  string
		key int64
	}
	var all []ranked
	for id, ws := range byTrace {
		found := false
		var best int64
		for _, w := range ws {
			if !match(w) {
				continue
			}
			k := key(w)
			if !found || (desc && k > best) || (!desc && k < best) {
				best = k
			}
			found = true
		}
		if found {
			all = append(all, ranked{id, best})
		}
	}
	slices.SortFunc(all, func(a, b ranked) int {
		c := cmp.Compare(a.key, b.key)
		if desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.id, b.id))
	})
	var out []string
	for i := offset; i < len(all) && i < offset+limit; i++ {
		out = append(out, all[i].id)
	}
	return out
}

func eqCond(name string, v *modelv1.TagValue) *modelv1.Criteria {
	return &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: name, Op: modelv1.Condition_BINARY_OP_EQ, Value: v}}}
}

func andCond(l, r *modelv1.Criteria) *modelv1.Criteria {
	return &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{Op: modelv1.LogicalExpression_LOGICAL_OP_AND, Left: l, Right: r}}}
}

// checkOAPTraces writes segments as OAP does and reads them the ways
// BanyanDBTraceQueryDAO does: by trace id (queryByTraceIdV2, with and
// without a time range) and the segment list (queryTraces: service,
// duration and state conditions, ordered by start time or duration,
// paged).
func checkOAPTraces(t *testing.T, conn *grpc.ClientConn) {
	ctx := ctxT(t)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	const traces = 24
	byTrace := oapTraceData(t, conn, oapTrace, traces, start)
	if t.Failed() {
		return
	}
	c := tracev1.NewTraceServiceClient(conn)
	rng := &modelv1.TimeRange{Begin: oapTimestamp(start.Add(-time.Minute)), End: oapTimestamp(start.Add(time.Hour))}

	// queryByTraceIdV2: every span of one trace, from every node.
	for _, id := range []string{"trace-003", "trace-010", "trace-023"} {
		for _, tr := range []*modelv1.TimeRange{nil, rng} {
			resp, err := c.Query(ctx, &tracev1.QueryRequest{
				Groups: []string{oapTrace}, Name: "segment", TimeRange: tr, Limit: 200,
				Criteria: eqCond("trace_id", strValue(id)), TagProjection: segmentTags,
			})
			if err != nil {
				t.Fatalf("query trace %s: %v", id, err)
			}
			if len(resp.GetTraces()) != 1 {
				t.Fatalf("query trace %s (range %v): %d traces, want 1", id, tr != nil, len(resp.GetTraces()))
			}
			checkTrace(t, "trace "+id, resp.GetTraces()[0], byTrace[id], segmentTags)
		}
	}

	// queryTraces: the segment list.
	latency := func(w *oapTraceWrite) int64 { return w.tags["latency"].GetInt().GetValue() }
	startTime := func(w *oapTraceWrite) int64 { return w.tags["start_time"].GetTimestamp().AsTime().UnixNano() }
	svc0 := func(w *oapTraceWrite) bool { return w.tags["service_id"].GetStr().GetValue() == "svc-0" }
	for _, tc := range []struct {
		what          string
		criteria      *modelv1.Criteria
		match         func(*oapTraceWrite) bool
		rule          string
		key           func(*oapTraceWrite) int64
		offset, limit int
	}{
		{"svc-0 by start time", eqCond("service_id", strValue("svc-0")), svc0, "start_time", startTime, 0, 5},
		{"svc-0 by duration, second page", eqCond("service_id", strValue("svc-0")), svc0, "latency", latency, 5, 5},
		{"svc-0, latency >= 100, errors, by duration", andCond(andCond(eqCond("service_id", strValue("svc-0")),
			&modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: "latency", Op: modelv1.Condition_BINARY_OP_GE, Value: intValue(100)}}}),
			eqCond("is_error", intValue(1))),
			func(w *oapTraceWrite) bool {
				return svc0(w) && latency(w) >= 100 && w.tags["is_error"].GetInt().GetValue() == 1
			},
			"latency", latency, 0, 20},
		{"everything by start time", nil, func(*oapTraceWrite) bool { return true }, "start_time", startTime, 0, 10},
		// OAP's tag filter: having(tags, ["k=v", ...]).
		{"tags having n=1, svc-1, by start time", andCond(eqCond("service_id", strValue("svc-1")),
			&modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: "tags", Op: modelv1.Condition_BINARY_OP_HAVING,
				Value: &modelv1.TagValue{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"http.method=GET", "n=1"}}}}}}}),
			func(w *oapTraceWrite) bool {
				return w.tags["service_id"].GetStr().GetValue() == "svc-1" && slices.Contains(w.tags["tags"].GetStrArray().GetValue(), "n=1")
			}, "start_time", startTime, 0, 20},
	} {
		resp, err := c.Query(ctx, &tracev1.QueryRequest{
			Groups: []string{oapTrace}, Name: "segment", TimeRange: rng, Criteria: tc.criteria,
			OrderBy: &modelv1.QueryOrder{IndexRuleName: tc.rule, Sort: modelv1.Sort_SORT_DESC},
			Offset:  uint32(tc.offset), Limit: uint32(tc.limit), TagProjection: []string{"service_id", "latency"},
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		want := expectTraces(byTrace, tc.match, tc.key, true, tc.offset, tc.limit)
		var got []string
		for _, tr := range resp.GetTraces() {
			got = append(got, tr.GetTraceId())
			checkTrace(t, tc.what, tr, byTrace[tr.GetTraceId()], []string{"service_id", "latency"})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: traces %v, want %v", tc.what, got, want)
		}
	}

	// A re-sent segment (a retried flush) is not read twice; a higher
	// version of it replaces it.
	w := byTrace["trace-005"][0]
	res, err := flushTraces(conn, []*oapTraceWrite{w})
	checkFlush(t, "re-sent segment", res, err, 1)
	newer := *w
	newer.span, newer.version = []byte("rewritten"), 2
	res, err = flushTraces(conn, []*oapTraceWrite{&newer})
	checkFlush(t, "segment version 2", res, err, 1)
	byTrace["trace-005"][0] = &newer
	resp, err := c.Query(ctx, &tracev1.QueryRequest{Groups: []string{oapTrace}, Name: "segment", Criteria: eqCond("trace_id", strValue("trace-005"))})
	if err != nil || len(resp.GetTraces()) != 1 {
		t.Fatalf("query trace-005: %v (%v)", resp, err)
	}
	checkTrace(t, "trace-005 after a re-send and a new version", resp.GetTraces()[0], byTrace["trace-005"], nil)
}
