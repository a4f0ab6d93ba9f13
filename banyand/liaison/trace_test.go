package liaison

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/banyand/schema"
)

const testTraceRev = 11

// testTraceSchema is a trace with a tag of every type besides its trace
// id, span id and timestamp tags.
func testTraceSchema() *databasev1.Trace {
	tags := []*databasev1.TraceTagSpec{{Name: "trace_id", Type: tString}, {Name: "span_id", Type: tString}, {Name: "start", Type: tTimeType}}
	for _, t := range allTypes("").GetTags() {
		tags = append(tags, &databasev1.TraceTagSpec{Name: t.GetName(), Type: t.GetType()})
	}
	return &databasev1.Trace{
		Metadata: &commonv1.Metadata{Group: testGroup, Name: "t", ModRevision: testTraceRev}, Tags: tags,
		TraceIdTagName: "trace_id", SpanIdTagName: "span_id", TimestampTagName: "start",
	}
}

// referenceTrace is the reference rules for one trace write: decoded with
// proto.Unmarshal, placed by its tag spec, checked, its span id and
// timestamp read from their tags, and its cluster write built with
// proto.Marshal.
func referenceTrace(cache *layouts, primer *commonv1.Metadata, raw []byte) reference {
	var req tracev1.WriteRequest
	if proto.Unmarshal(raw, &req) != nil {
		return reference{decodeErr: true}
	}
	ref := reference{messageID: req.GetVersion()}
	md := refMetadata(primer, req.GetMetadata())
	l := cache.snapshot().traces[nameKey{Group: md.GetGroup(), Name: md.GetName()}]
	if l == nil {
		ref.status = modelv1.Status_STATUS_NOT_FOUND
		return ref
	}
	if ref.status = refSchemaStatus(l.layout, md); ref.status != modelv1.Status_STATUS_SUCCEED {
		return ref
	}
	if len(req.GetSpan()) > schema.MaxSpanBytes {
		ref.status = modelv1.Status_STATUS_INVALID_ARGUMENT
		return ref
	}
	families := []*modelv1.TagFamilyForWrite{{Tags: req.GetTags()}}
	if spec := req.GetTagSpec(); spec != nil {
		var werr *writeError
		if families, werr = refReorderTags(l.layout, families, []specSource{traceSpec{spec}}); werr != nil {
			ref.status = werr.status
			return ref
		}
	}
	prep, werr := refFinishTags(l.layout, families, nil)
	if werr != nil {
		ref.status = werr.status
		return ref
	}
	tag := func(i int) *modelv1.TagValue {
		if i < len(families[0].GetTags()) {
			return families[0].GetTags()[i]
		}
		return nil
	}
	spanID := tag(l.span.id).GetStr()
	if spanID == nil || spanID.GetValue() == "" {
		ref.status = modelv1.Status_STATUS_INVALID_ARGUMENT
		return ref
	}
	ts := tag(l.span.timestamp).GetTimestamp()
	if werr := refTimestamp(ts); werr != nil {
		ref.status = werr.status
		return ref
	}
	payload, err := proto.Marshal(&clusterv1.TraceWrite{
		Group: l.group, Name: l.name, ShardId: prep.shard, SeriesKey: prep.seriesKey,
		Span:              &clusterv1.SpanValue{SpanId: spanID.GetValue(), Timestamp: ts, Tags: families[0], Span: req.GetSpan()},
		SchemaModRevision: l.modRevision, Version: int64(req.GetVersion()),
	})
	if err != nil {
		ref.status = modelv1.Status_STATUS_INTERNAL_ERROR
		return ref
	}
	ref.status, ref.group, ref.shard, ref.payload = modelv1.Status_STATUS_SUCCEED, l.group, prep.shard, payload
	return ref
}

// traceSpec is a TagSpec as the unnamed family's spec.
type traceSpec struct{ *tracev1.TagSpec }

func (traceSpec) GetName() string { return "" }

// traceAnswer is a trace WriteResponse as compare reads answers: by the
// version it echoes.
type traceAnswer struct{ *tracev1.WriteResponse }

func (a traceAnswer) GetMessageId() uint64 { return a.GetVersion() }

func runTraceWrite(svc *Services, q *fakeQueue, raw ...[]byte) writeResult[traceAnswer] {
	srv := &fakeStream[tracev1.WriteRequest, tracev1.WriteResponse]{ctx: context.Background(), in: raw}
	err := svc.Trace.Write(srv)
	_, msgs := q.published()
	res := writeResult[traceAnswer]{msgs: msgs, err: err}
	for _, r := range srv.out {
		res.resps = append(res.resps, traceAnswer{r})
	}
	return res
}

func checkTraceWrite(t testing.TB, cache *layouts, raw []byte) {
	t.Helper()
	md := streamMD("t")
	primer := mustMarshal(t, &tracev1.WriteRequest{Metadata: md, Version: primerID})
	q := &fakeQueue{}
	svc := NewServices(WriteConfig{}, Deps{Logger: discardLogger, Schema: cache.src, Queue: q, Now: testNow})
	res := runTraceWrite(svc, q, primer, raw)
	compare(t, raw, res, referenceTrace(cache, md, raw), func() proto.Message { return new(clusterv1.TraceWrite) })
}

// traceSeeds are valid and invalid spans, in schema order and by a spec.
func traceSeeds(t testing.TB) map[string][]byte {
	ts := timestamppb.New(time.Unix(1700000000, 0))
	vTime := func(ts *timestamppb.Timestamp) *modelv1.TagValue {
		return &modelv1.TagValue{Value: &modelv1.TagValue_Timestamp{Timestamp: ts}}
	}
	every := []*modelv1.TagValue{vStr("trace-1"), vStr("span-1"), vTime(ts), vStr("svc"), vInt(7), vBin([]byte{1}), vStrs("a", "b"), nil, vTime(ts)}
	with := func(i int, v *modelv1.TagValue) []*modelv1.TagValue {
		tags := append([]*modelv1.TagValue(nil), every...)
		tags[i] = v
		return tags
	}
	md := streamMD("t")
	seeds := map[string][]*tracev1.WriteRequest{
		"every tag type":         {{Metadata: md, Tags: every, Span: []byte("span"), Version: 3}},
		"trailing tags omitted":  {{Metadata: md, Tags: every[:4], Version: 3}},
		"no span bytes":          {{Metadata: md, Tags: every}},
		"no trace id":            {{Metadata: md, Tags: with(0, nil), Version: 3}},
		"no span id":             {{Metadata: md, Tags: with(1, vStr("")), Version: 3}},
		"no timestamp":           {{Metadata: md, Tags: with(2, nil), Version: 3}},
		"sub-millisecond":        {{Metadata: md, Tags: with(2, vTime(timestamppb.New(time.Unix(1700000000, 5)))), Version: 3}},
		"wrong tag type":         {{Metadata: md, Tags: with(4, vStr("x")), Version: 3}},
		"binary trace id":        {{Metadata: md, Tags: with(0, vBin([]byte("t"))), Version: 3}},
		"unknown trace":          {{Metadata: streamMD("nope"), Tags: every, Version: 3}},
		"a stream's name":        {{Metadata: streamMD("s"), Tags: every, Version: 3}},
		"expired schema":         {{Metadata: &commonv1.Metadata{Group: testGroup, Name: "t", ModRevision: 1}, Tags: every, Version: 3}},
		"spec-ordered":           {{Metadata: md, Tags: []*modelv1.TagValue{vInt(7), vStr("svc"), vTime(ts), vStr("span-1"), vStr("trace-1")}, Version: 3, TagSpec: &tracev1.TagSpec{TagNames: []string{"int", "str", "start", "span_id", "trace_id"}}}},
		"spec with unknown tag":  {{Metadata: md, Tags: every[:1], Version: 3, TagSpec: &tracev1.TagSpec{TagNames: []string{"color"}}}},
		"spec and values differ": {{Metadata: md, Tags: every[:2], Version: 3, TagSpec: &tracev1.TagSpec{TagNames: []string{"trace_id"}}}},
	}
	out := map[string][]byte{}
	for name, reqs := range seeds {
		out[name] = mustMarshal(t, reqs[0])
	}
	big := proto.CloneOf(seeds["every tag type"][0])
	big.Span = bytes.Repeat([]byte{'x'}, schema.MaxSpanBytes+1)
	out["span over the size limit"] = mustMarshal(t, big)
	for name, b := range malformed(t, out["every tag type"]) {
		out[name] = b
	}
	return out
}

// The trace write path against the reference: statuses, shards and the
// published TraceWrite, for each seed and, for a few, every simple
// corruption of it.
func TestTraceWriteDifferential(t *testing.T) {
	cache := newTestCache(t)
	mutate := map[string]bool{"every tag type": true, "spec-ordered": true, "no span id": true}
	for name, seed := range traceSeeds(t) {
		t.Run(name, func(t *testing.T) {
			checkTraceWrite(t, cache, seed)
			if !mutate[name] || testing.Short() {
				return
			}
			for _, m := range mutations(seed) {
				checkTraceWrite(t, cache, m)
			}
		})
	}
}

func FuzzTraceWriteValidation(f *testing.F) {
	seeds := traceSeeds(f)
	for name, seed := range seeds {
		if name != "span over the size limit" {
			f.Add(seed)
		}
	}
	cache := newTestCache(f)
	f.Fuzz(func(t *testing.T, raw []byte) { checkTraceWrite(t, cache, raw) })
}
