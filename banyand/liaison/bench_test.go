package liaison

import (
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/registry"
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

// The realistic shape of `banyand bench --shape realistic`: seven tags of
// mixed types, the entity (service, instance) and an endpoint in one
// family, a 100-byte message, a string array, an int array and a 16-byte
// binary in the other; a measure adds an int and a float field.
func realisticSchema(b *testing.B) (stream, measure *layout) {
	entity := family("searchable", "service", tString, "instance", tInteger, "endpoint", tString)
	data := family("data", "message", tString, "labels", tStrArr, "codes", tIntArr, "blob", tBinary)
	c := newTestSchema(b)
	var objs []registry.Object
	for _, m := range []proto.Message{
		testGroupSchema(),
		&databasev1.Stream{
			Metadata:    &commonv1.Metadata{Group: testGroup, Name: "rs", ModRevision: 11},
			TagFamilies: []*databasev1.TagFamilySpec{entity, data},
			Entity:      &databasev1.Entity{TagNames: []string{"service", "instance"}},
		},
		&databasev1.Measure{
			Metadata:    &commonv1.Metadata{Group: testGroup, Name: "rm", ModRevision: 12},
			TagFamilies: []*databasev1.TagFamilySpec{entity, data},
			Fields: []*databasev1.FieldSpec{
				{Name: "value", FieldType: databasev1.FieldType_FIELD_TYPE_INT},
				{Name: "score", FieldType: databasev1.FieldType_FIELD_TYPE_FLOAT},
			},
			Entity: &databasev1.Entity{TagNames: []string{"service", "instance"}},
		},
	} {
		k, err := registry.KeyOf(m)
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, registry.Object{Key: k, Revision: 10, Message: m})
	}
	c.Reset(objs, 10)
	s := newLayouts(discardLogger, c).snapshot()
	return s.streams[nameKey{Group: testGroup, Name: "rs"}].layout, s.measures[nameKey{Group: testGroup, Name: "rm"}].layout
}

func realisticFamilies() []*modelv1.TagFamilyForWrite {
	msg := make([]byte, 100)
	for i := range msg {
		msg[i] = 'a' + byte(i%26)
	}
	return []*modelv1.TagFamilyForWrite{
		fam(vStr("svc-3"), vInt(7), vStr("/api/v1/op-3")),
		fam(vStr(string(msg)), vStrs("env:prod", "zone:eu-1", "tier:web"), vInts(200, 404, 503), vBin([]byte("0123456789abcdef"))),
	}
}

// BenchmarkPrepareRealistic is BenchmarkPrepareStream's work for the
// realistic shape, of a stream element and of a measure data point.
func BenchmarkPrepareRealistic(b *testing.B) {
	sl, ml := realisticSchema(b)
	fams := realisticFamilies()
	stream := mustMarshal(b, &streamv1.WriteRequest{Metadata: streamMD("rs"), MessageId: 1,
		Element: &streamv1.ElementValue{ElementId: "b1a2b3c4-123456", Timestamp: ts0, TagFamilies: fams}})
	measure := mustMarshal(b, &measurev1.WriteRequest{Metadata: streamMD("rm"), MessageId: 1,
		DataPoint: &measurev1.DataPointValue{Timestamp: ts0, TagFamilies: fams, Fields: []*modelv1.FieldValue{fInt(123456), fFloat(0.5)}}})
	b.Run("stream", func(b *testing.B) { benchPrepareModel(b, streamModel, sl, stream) })
	b.Run("measure", func(b *testing.B) { benchPrepareModel(b, measureModel, ml, measure) })
}

func benchPrepareModel(b *testing.B, m *model, l *layout, raw []byte) {
	st := &writeStream{m: m}
	var req wire.Request
	var payload []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if err := m.parse(raw, &req); err != nil || req.Merged {
			b.Fatal("not parsed exactly", err)
		}
		value, prep, werr := st.prepare(l, &req)
		if werr != nil {
			b.Fatal(werr)
		}
		st.keyBuf = prep.seriesKey
		payload = wire.AppendClusterWrite(payload[:0], testGroup, "r", prep.shard, prep.seriesKey, value, 11, 0, nil)
	}
}
