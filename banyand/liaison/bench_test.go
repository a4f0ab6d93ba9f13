package liaison

import (
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

func benchStreamRequest(b *testing.B) (*streamLayout, []byte) {
	l := newTestCache(b).snapshot().streams[nameKey{testGroup, "s"}]
	raw := mustMarshal(b, &streamv1.WriteRequest{Metadata: streamMD("s"), Element: el(ts0, scalarBase(), extra()), MessageId: 1})
	return l, raw
}

// BenchmarkPrepareStream is the fast path's work per message after the
// bytes arrive: read the request at the wire level, check it against the
// schema, compute series key and shard, and encode the payload.
func BenchmarkPrepareStream(b *testing.B) {
	l, raw := benchStreamRequest(b)
	var w wireWrite
	var keyBuf []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if !parseStreamRequest(raw, &w) {
			b.Fatal("not read by the fast path")
		}
		prep, ok := l.fastPrepare(&w, keyBuf)
		if !ok {
			b.Fatal("not prepared by the fast path")
		}
		keyBuf = prep.seriesKey
		if _, _, err := encodeWrite(l.layout, prep, w.value, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareStreamSlow is the same message through the
// decode-and-check path, for comparison.
func BenchmarkPrepareStreamSlow(b *testing.B) {
	l, raw := benchStreamRequest(b)
	var keyBuf []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var req streamv1.WriteRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			b.Fatal(err)
		}
		el, prep, werr := l.prepareStream(&req, keyBuf)
		if werr != nil {
			b.Fatal(werr)
		}
		keyBuf = prep.seriesKey
		if _, err := proto.Marshal(&clusterv1.StreamWrite{
			Group: l.group, Name: l.name, ShardId: prep.shard, SeriesKey: prep.seriesKey,
			Element: el, SchemaModRevision: l.modRevision,
		}); err != nil {
			b.Fatal(err)
		}
	}
}
