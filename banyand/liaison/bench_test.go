package liaison

import (
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

// benchShapes are the requests the benchmarks write: scalar tags only,
// and a tag of every type (arrays, binary, timestamp).
var benchShapes = []struct {
	name string
	base func() *modelv1.TagFamilyForWrite
}{{"scalar", scalarBase}, {"every-type", fullBase}}

func benchStreamRequest(b *testing.B, base func() *modelv1.TagFamilyForWrite) (*streamLayout, []byte) {
	l := newTestCache(b).snapshot().streams[nameKey{Group: testGroup, Name: "s"}]
	raw := mustMarshal(b, &streamv1.WriteRequest{Metadata: streamMD("s"), Element: el(ts0, base(), extra()), MessageId: 1})
	return l, raw
}

// BenchmarkPrepareStream is the write path's work per message after the
// bytes arrive: read the request at the wire level, apply the rules,
// compute series key and shard, and encode the payload.
func BenchmarkPrepareStream(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape.name, func(b *testing.B) { benchPrepare(b, shape.base) })
	}
}

func benchPrepare(b *testing.B, base func() *modelv1.TagFamilyForWrite) {
	l, raw := benchStreamRequest(b, base)
	st := &writeStream{m: streamModel}
	var req wire.Request
	var payload []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if err := wire.ParseStreamRequest(raw, &req); err != nil || req.Merged {
			b.Fatal("not parsed exactly", err)
		}
		value, prep, werr := st.prepare(l.layout, &req)
		if werr != nil {
			b.Fatal(werr)
		}
		st.keyBuf = prep.seriesKey
		payload = wire.AppendClusterWrite(payload[:0], l.group, l.name, prep.shard, prep.seriesKey, value, l.modRevision, 0, l.indexSpec)
	}
}

// BenchmarkPrepareStreamDecoded is the same message decoded with
// proto.Unmarshal, checked by the reference rules and encoded with
// proto.Marshal: what the wire-level path saves.
func BenchmarkPrepareStreamDecoded(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape.name, func(b *testing.B) { benchPrepareDecoded(b, shape.base) })
	}
}

func benchPrepareDecoded(b *testing.B, base func() *modelv1.TagFamilyForWrite) {
	l, raw := benchStreamRequest(b, base)
	var keyBuf []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var req streamv1.WriteRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			b.Fatal(err)
		}
		el, prep, werr := refPrepareStream(l, &req, keyBuf)
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
