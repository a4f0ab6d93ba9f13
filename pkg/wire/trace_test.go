package wire

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
)

func seedSpan() *clusterv1.SpanValue {
	return &clusterv1.SpanValue{
		SpanId: "s1", Timestamp: timestamppb.New(time.Unix(1700000000, 0)),
		Tags: everyTag(), Span: []byte("span bytes"),
	}
}

func traceRequestSeeds(t testing.TB) [][]byte {
	return [][]byte{
		mustMarshal(t, &tracev1.WriteRequest{Metadata: seedMetadata, Tags: everyTag().GetTags(), Span: []byte{0, 1, 2}, Version: 7,
			TagSpec: &tracev1.TagSpec{TagNames: []string{"trace_id", "ts"}}}),
		mustMarshal(t, &tracev1.WriteRequest{Tags: everyTag().GetTags()[:2], Version: 1 << 63}),
		mustMarshal(t, &tracev1.WriteRequest{}),
	}
}

func traceWriteSeeds(t testing.TB) [][]byte {
	return [][]byte{
		mustMarshal(t, &clusterv1.TraceWrite{Group: "g", Name: "n", ShardId: 3, SeriesKey: []byte{1, 2}, Span: seedSpan(), SchemaModRevision: 4, Version: 9}),
		mustMarshal(t, &clusterv1.TraceWrite{Group: "g", Span: &clusterv1.SpanValue{}}),
	}
}

// checkTraceRequest holds ParseTraceRequest to proto.Unmarshal.
func checkTraceRequest(t testing.TB, b []byte) {
	var r Request
	agree(t, b, new(tracev1.WriteRequest), func(b []byte) (bool, error) {
		err := ParseTraceRequest(b, &r)
		return r.Merged, err
	}, func(want *tracev1.WriteRequest) {
		if (r.Metadata != nil) != (want.GetMetadata() != nil) {
			t.Fatalf("%x: metadata %x, want %v", b, r.Metadata, want.GetMetadata())
		}
		if want.GetMetadata() != nil {
			var got commonv1.Metadata
			if err := proto.Unmarshal(r.Metadata, &got); err != nil || !proto.Equal(&got, want.GetMetadata()) {
				t.Fatalf("metadata %v (%v), want %v", &got, err, want.GetMetadata())
			}
		}
		checkFamilies(t, &r.Point, []*modelv1.TagFamilyForWrite{{Tags: want.GetTags()}})
		if !bytes.Equal(r.Point.Span, want.GetSpan()) || uint64(r.Point.Version) != want.GetVersion() || r.MessageID != want.GetVersion() {
			t.Fatalf("%x: span %x version %d id %d, want %x %d", b, r.Point.Span, r.Point.Version, r.MessageID, want.GetSpan(), want.GetVersion())
		}
		if (len(r.Spec) == 1) != (want.GetTagSpec() != nil) || len(r.Spec) > 1 {
			t.Fatalf("%d specs, want the spec %v", len(r.Spec), want.GetTagSpec())
		}
		if len(r.Spec) == 1 {
			var got tracev1.TagSpec
			if err := proto.Unmarshal(r.Spec[0], &got); err != nil || !proto.Equal(&got, want.GetTagSpec()) {
				t.Fatalf("spec %v (%v), want %v", &got, err, want.GetTagSpec())
			}
		}
		// The liaison rebuilds the span as a SpanValue from this view.
		var back clusterv1.SpanValue
		if err := proto.Unmarshal(AppendSpanValue(nil, &r.Point), &back); err != nil {
			t.Fatalf("AppendSpanValue: %v", err)
		}
		if !bytes.Equal(back.GetSpan(), want.GetSpan()) || !sameFamilies([]*modelv1.TagFamilyForWrite{back.GetTags()}, []*modelv1.TagFamilyForWrite{{Tags: want.GetTags()}}) {
			t.Fatalf("AppendSpanValue: %v, want the tags and span of %v", &back, want)
		}
	})
}

// checkTraceWrite holds ParseTraceWrite to proto.Unmarshal.
func checkTraceWrite(t testing.TB, b []byte) {
	var w ClusterWrite
	agree(t, b, new(clusterv1.TraceWrite), func(b []byte) (bool, error) {
		err := ParseTraceWrite(b, &w, Options{})
		return w.Merged, err
	}, func(m *clusterv1.TraceWrite) {
		if string(w.Group) != m.GetGroup() || string(w.Name) != m.GetName() || w.Shard != m.GetShardId() ||
			!bytes.Equal(w.SeriesKey, m.GetSeriesKey()) || w.Revision != m.GetSchemaModRevision() || w.Version != m.GetVersion() {
			t.Fatalf("%x: parsed %q %q %d %x %d %d, want %v", b, w.Group, w.Name, w.Shard, w.SeriesKey, w.Revision, w.Version, m)
		}
		sv := m.GetSpan()
		if (w.Value != nil) != (sv != nil) {
			t.Fatalf("value %x, want present=%v", w.Value, sv != nil)
		}
		if sv == nil {
			return
		}
		p := &w.Point
		if string(p.ElementID) != sv.GetSpanId() || !bytes.Equal(p.Span, sv.GetSpan()) {
			t.Fatalf("%x: span id %q span %x, want %v", b, p.ElementID, p.Span, sv)
		}
		checkTimestamp(t, p, sv.GetTimestamp())
		var fams []*modelv1.TagFamilyForWrite
		if sv.GetTags() != nil {
			fams = append(fams, sv.GetTags())
		}
		checkFamilies(t, p, fams)
		var index clusterv1.SpanValue
		if err := proto.Unmarshal(AppendSpanIndex(nil, w.Value), &index); err != nil || len(index.GetSpan()) != 0 ||
			index.GetSpanId() != sv.GetSpanId() || !proto.Equal(index.GetTimestamp(), sv.GetTimestamp()) || !proto.Equal(index.GetTags(), sv.GetTags()) {
			t.Fatalf("AppendSpanIndex: %v (%v), want %v without its span", &index, err, sv)
		}
		var back clusterv1.SpanValue
		if err := proto.Unmarshal(AppendSpanValue(nil, p), &back); err != nil || !proto.Equal(&back, sv) {
			if err != nil || back.GetSpanId() != sv.GetSpanId() || !bytes.Equal(back.GetSpan(), sv.GetSpan()) ||
				!proto.Equal(back.GetTimestamp(), sv.GetTimestamp()) || len(back.GetTags().GetTags()) != len(sv.GetTags().GetTags()) {
				t.Fatalf("AppendSpanValue: %v (%v), want %v", &back, err, sv)
			}
		}
	})
}

func TestTraceRequestMatchesProto(t *testing.T) { each(t, traceRequestSeeds(t), checkTraceRequest) }

func TestTraceWriteMatchesProto(t *testing.T) { each(t, traceWriteSeeds(t), checkTraceWrite) }

func TestTraceWriteResponseMatchesProtoMarshal(t *testing.T) {
	md := mustMarshal(t, seedMetadata)
	for _, want := range []*tracev1.WriteResponse{
		{Metadata: seedMetadata, Version: 5, Status: "STATUS_SUCCEED"},
		{Status: "STATUS_INVALID_ARGUMENT"},
		{Metadata: &commonv1.Metadata{}, Version: 1 << 63},
	} {
		raw := md
		if want.GetMetadata() != nil && want.GetMetadata().GetGroup() == "" {
			raw = nil
		}
		got := AppendTraceWriteResponse(nil, raw, want.Metadata != nil, want.GetVersion(), want.GetStatus())
		exp, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, exp) {
			t.Fatalf("AppendTraceWriteResponse = %x, proto.Marshal = %x", got, exp)
		}
		var r WriteResponse
		if err := ParseTraceWriteResponse(got, &r); err != nil || r.MessageID != want.GetVersion() || string(r.Status) != want.GetStatus() {
			t.Fatalf("ParseTraceWriteResponse(%x) = %+v, %v; want %v", got, r, err, want)
		}
	}
}

func FuzzParseTraceRequest(f *testing.F) {
	for _, s := range traceRequestSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkTraceRequest(t, b) })
}

func FuzzParseTraceWrite(f *testing.F) {
	for _, s := range traceWriteSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkTraceWrite(t, b) })
}
