package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/route"
)

func segmentSchema() *databasev1.Trace {
	return &databasev1.Trace{
		Metadata: &commonv1.Metadata{Group: testGroup, Name: "segment"},
		Tags: []*databasev1.TraceTagSpec{
			{Name: "trace_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "span_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "service", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "ts", Type: databasev1.TagType_TAG_TYPE_TIMESTAMP},
			{Name: "duration", Type: databasev1.TagType_TAG_TYPE_INT},
		},
		TraceIdTagName: "trace_id", SpanIdTagName: "span_id", TimestampTagName: "ts",
	}
}

type span struct {
	trace, id, service string
	ts                 time.Time
	duration, version  int64
	body               string
}

func (s span) msg(t testing.TB) []byte {
	t.Helper()
	key, err := route.AppendSeriesKey(nil, "segment", []route.EntityValue{route.StrValue(s.trace)})
	if err != nil {
		t.Fatal(err)
	}
	ts := timestamppb.New(s.ts)
	b, err := proto.Marshal(&clusterv1.TraceWrite{
		Group: testGroup, Name: "segment", SeriesKey: key, Version: s.version,
		Span: &clusterv1.SpanValue{SpanId: s.id, Timestamp: ts, Span: []byte(s.body), Tags: &modelv1.TagFamilyForWrite{Tags: []*modelv1.TagValue{
			str(s.trace), str(s.id), str(s.service), {Value: &modelv1.TagValue_Timestamp{Timestamp: ts}}, intv(s.duration),
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustWriteSpans(t testing.TB, s *Store, spans ...span) {
	t.Helper()
	msgs := make([][]byte, len(spans))
	for i, sp := range spans {
		msgs[i] = sp.msg(t)
	}
	if errs := s.WriteTrace(context.Background(), msgs); errs != nil {
		t.Fatalf("write spans: %v", errs)
	}
}

// selectTraces runs the first phase and renders its answer as id:key.
func selectTraces(t testing.TB, s *Store, req *tracev1.QueryRequest, orderTag string) []string {
	t.Helper()
	req.Groups, req.Name = []string{testGroup}, "segment"
	res, err := s.QueryTraces(context.Background(), &clusterv1.TraceQuery{Request: req, Schema: segmentSchema(), OrderTag: orderTag})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range res.GetTraces() {
		out = append(out, fmt.Sprintf("%s:%d", k.GetTraceId(), k.GetKey()))
	}
	return out
}

// spansOf runs the second phase and renders its answer as trace/span@version=body.
func spansOf(t testing.TB, s *Store, ids ...string) []string {
	t.Helper()
	req := &tracev1.QueryRequest{Groups: []string{testGroup}, Name: "segment", TagProjection: []string{"service", "duration"}}
	res, err := s.QueryTraces(context.Background(), &clusterv1.TraceQuery{Request: req, Schema: segmentSchema(), TraceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sp := range res.GetSpans() {
		if len(sp.GetTags()) != 2 || sp.GetTags()[0].GetKey() != "service" || sp.GetTags()[1].GetKey() != "duration" {
			t.Fatalf("span %s: projected tags %v", sp.GetSpanId(), sp.GetTags())
		}
		out = append(out, fmt.Sprintf("%s/%s@%d=%s", sp.GetTraceId(), sp.GetSpanId(), sp.GetVersion(), sp.GetSpan()))
	}
	slices.Sort(out)
	return out
}

// Spans are kept by (trace, timestamp, span id): a redelivery does not
// duplicate, the highest version wins, and both hold after a restart. The
// first phase keeps each trace's best key among its matching spans and
// the first offset+limit traces; the second reads every span of a trace
// whatever the criteria and time.
func TestTraceSpansKeysVersionsAndQueries(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	mustWriteSpans(t, s,
		span{"T1", "a", "svc-x", t0, 10, 1, "a1"},
		span{"T1", "b", "svc-y", t0.Add(time.Second), 300, 1, "b1"},
		span{"T2", "a", "svc-x", t0.Add(2 * time.Second), 50, 1, "T2a"},
		span{"T3", "a", "svc-y", t0.Add(3 * time.Second), 70, 1, "T3a"},
	)
	mustWriteSpans(t, s, span{"T1", "a", "svc-x", t0, 10, 1, "a1"}) // redelivered
	mustWriteSpans(t, s, span{"T1", "b", "svc-y", t0.Add(time.Second), 300, 3, "b3"},
		span{"T1", "b", "svc-y", t0.Add(time.Second), 300, 2, "b2"}) // a straggler after the newer version

	check := func(stage string) {
		t.Helper()
		if got, want := spansOf(t, s, "T1", "T2"), []string{"T1/a@1=a1", "T1/b@3=b3", "T2/a@1=T2a"}; !slices.Equal(got, want) {
			t.Fatalf("%s: spans %v, want %v", stage, got, want)
		}
		desc := &modelv1.QueryOrder{Sort: modelv1.Sort_SORT_DESC}
		// By duration, descending: T1's best is its svc-y span.
		if got, want := selectTraces(t, s, &tracev1.QueryRequest{OrderBy: desc}, "duration"), []string{"T1:300", "T3:70", "T2:50"}; !slices.Equal(got, want) {
			t.Fatalf("%s: by duration %v, want %v", stage, got, want)
		}
		// Only svc-x spans match: T1's key is its svc-x span's.
		svcX := eq("service", str("svc-x"))
		if got, want := selectTraces(t, s, &tracev1.QueryRequest{Criteria: svcX, OrderBy: desc}, "duration"), []string{"T2:50", "T1:10"}; !slices.Equal(got, want) {
			t.Fatalf("%s: svc-x by duration %v, want %v", stage, got, want)
		}
		// offset+limit bound what a node returns; the time range bounds the
		// spans that match.
		if got := selectTraces(t, s, &tracev1.QueryRequest{Offset: 1, Limit: 1}, ""); len(got) != 2 || got[0] != fmt.Sprintf("T1:%d", t0.UnixNano()) {
			t.Fatalf("%s: first two by time %v", stage, got)
		}
		tr := timeRange(t0.Add(1500*time.Millisecond), t0.Add(time.Hour))
		if got, want := selectTraces(t, s, &tracev1.QueryRequest{TimeRange: tr}, "duration"), []string{"T2:50", "T3:70"}; !slices.Equal(got, want) {
			t.Fatalf("%s: in range %v, want %v", stage, got, want)
		}
		// By trace id: one series read.
		if got, want := selectTraces(t, s, &tracev1.QueryRequest{Criteria: eq("trace_id", str("T3"))}, ""), []string{fmt.Sprintf("T3:%d", t0.Add(3*time.Second).UnixNano())}; !slices.Equal(got, want) {
			t.Fatalf("%s: by trace id %v, want %v", stage, got, want)
		}
	}
	check("written")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	check("reopened")

	// Bad writes fail alone; nothing of them is stored.
	noSpanID := span{"T9", "", "svc-x", t0, 1, 1, "x"}
	errs := s.WriteTrace(context.Background(), [][]byte{noSpanID.msg(t), {0xff}, span{"T9", "ok", "svc-x", t0, 1, 1, "ok"}.msg(t)})
	if len(errs) != 3 || !errors.Is(errs[0], queue.ErrInvalidMessage) || !errors.Is(errs[1], queue.ErrInvalidMessage) || errs[2] != nil {
		t.Fatalf("bad writes: %v", errs)
	}
	if got, want := spansOf(t, s, "T9"), []string{"T9/ok@1=ok"}; !slices.Equal(got, want) {
		t.Fatalf("after bad writes: %v, want %v", got, want)
	}
	// A query on an unknown tag is an invalid message.
	_, err := s.QueryTraces(context.Background(), &clusterv1.TraceQuery{
		Request: &tracev1.QueryRequest{Groups: []string{testGroup}, Name: "segment", Criteria: eq("color", str("red"))}, Schema: segmentSchema(),
	})
	if !errors.Is(err, queue.ErrInvalidMessage) {
		t.Fatalf("query on an unknown tag: %v", err)
	}
}

// The first phase holds at most offset+limit traces whatever it scans,
// and a trace evicted early comes back when a later span of it is better.
func TestTraceTopKeepsTheBestKeys(t *testing.T) {
	top := newTraceTop(2, true)
	for _, k := range []struct {
		id  string
		key int64
	}{{"a", 1}, {"b", 2}, {"c", 3}, {"a", 9}, {"d", 0}, {"b", 1}, {"c", 4}} {
		top.offer(&clusterv1.TraceKey{TraceId: k.id, Key: k.key})
		if len(top.heap) > 2 || len(top.at) != len(top.heap) {
			t.Fatalf("holds %d traces (%d indexed), want at most 2", len(top.heap), len(top.at))
		}
	}
	var got []string
	for _, k := range top.sorted() {
		got = append(got, fmt.Sprintf("%s:%d", k.GetTraceId(), k.GetKey()))
	}
	if want := []string{"a:9", "c:4"}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
}

// Ordered by time, the first phase gives the same traces when it skips
// segments (descending) or stops inside one (ascending) once it holds
// offset+limit traces: spans over four daily segments, a trace with spans
// in two of them.
func TestTraceSelectionByTimeAcrossSegments(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	day0 := base.Truncate(24 * time.Hour)
	var spans []span
	for d := range 4 {
		for i := range 3 {
			at := day0.Add(time.Duration(d)*24*time.Hour + time.Duration(i)*time.Hour)
			spans = append(spans, span{fmt.Sprintf("D%dT%d", d, i), "a", "svc-x", at, int64(d*10 + i), 1, "x"})
		}
	}
	// D0T0 has a late span too: descending, it is the latest trace.
	spans = append(spans, span{"D0T0", "late", "svc-x", day0.Add(3*24*time.Hour + 5*time.Hour), 1, 1, "x"})
	mustWriteSpans(t, s, spans...)
	ids := func(got []string) []string {
		var out []string
		for _, g := range got {
			out = append(out, g[:strings.IndexByte(g, ':')])
		}
		return out
	}
	for _, tc := range []struct {
		sort          modelv1.Sort
		offset, limit uint32
		want          []string
	}{
		{modelv1.Sort_SORT_DESC, 0, 2, []string{"D0T0", "D3T2"}},
		{modelv1.Sort_SORT_DESC, 2, 2, []string{"D0T0", "D3T2", "D3T1", "D3T0"}},
		{modelv1.Sort_SORT_ASC, 0, 2, []string{"D0T0", "D0T1"}},
		{modelv1.Sort_SORT_ASC, 3, 2, []string{"D0T0", "D0T1", "D0T2", "D1T0", "D1T1"}},
	} {
		got := ids(selectTraces(t, s, &tracev1.QueryRequest{OrderBy: &modelv1.QueryOrder{Sort: tc.sort}, Offset: tc.offset, Limit: tc.limit}, ""))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v offset %d limit %d: %v, want %v", tc.sort, tc.offset, tc.limit, got, tc.want)
		}
	}
}
