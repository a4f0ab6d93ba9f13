package wire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// The differential tests hold each parser to the package contract:
// proto.Unmarshal of the same bytes is the reference.

func everyTag() *modelv1.TagFamilyForWrite {
	return &modelv1.TagFamilyForWrite{Tags: []*modelv1.TagValue{
		{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "svc"}}},
		{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: -42}}},
		{Value: &modelv1.TagValue_BinaryData{BinaryData: []byte{0, 1, 2}}},
		{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"a", "", "ü"}}}},
		{Value: &modelv1.TagValue_IntArray{IntArray: &modelv1.IntArray{Value: []int64{1, -1, math.MaxInt64}}}},
		{Value: &modelv1.TagValue_Timestamp{Timestamp: timestamppb.New(time.Unix(1700000000, 5e6))}},
		{Value: &modelv1.TagValue_Null{Null: structpb.NullValue_NULL_VALUE}},
		{},
	}}
}

func everyField() []*modelv1.FieldValue {
	return []*modelv1.FieldValue{
		{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: 7}}},
		{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: -1.5}}},
		{Value: &modelv1.FieldValue_Str{Str: &modelv1.Str{Value: "x"}}},
		{Value: &modelv1.FieldValue_BinaryData{BinaryData: []byte("bin")}},
		{Value: &modelv1.FieldValue_Null{}},
		{},
	}
}

func seedElement() *streamv1.ElementValue {
	return &streamv1.ElementValue{
		ElementId: "e1", Timestamp: timestamppb.New(time.Unix(1700000000, 0)),
		TagFamilies: []*modelv1.TagFamilyForWrite{everyTag(), {}, everyTag()},
	}
}

func seedDataPoint() *measurev1.DataPointValue {
	return &measurev1.DataPointValue{
		Timestamp:   timestamppb.New(time.Unix(1700000000, 0)),
		TagFamilies: []*modelv1.TagFamilyForWrite{everyTag()},
		Fields:      everyField(), Version: 12,
	}
}

var seedMetadata = &commonv1.Metadata{Group: "g", Name: "n", ModRevision: 3}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// corruptions derives odd and malformed encodings from a valid one.
func corruptions(valid []byte) [][]byte {
	out := [][]byte{valid, {}}
	for i := range valid {
		out = append(out, valid[:i])
		for _, c := range []byte{0x00, 0x80, 0xff, valid[i] ^ 0x01, valid[i] + 1} {
			m := bytes.Clone(valid)
			m[i] = c
			out = append(out, m)
		}
	}
	// every field repeated (protobuf merges), an unknown field, a group,
	// a field number out of range
	out = append(out, append(bytes.Clone(valid), valid...))
	out = append(out, protowire.AppendVarint(protowire.AppendTag(bytes.Clone(valid), 99, protowire.VarintType), 1))
	out = append(out, append(bytes.Clone(valid), 0x0b, 0x0c))
	out = append(out, protowire.AppendVarint(append(bytes.Clone(valid), 0xf8, 0xff, 0xff, 0xff, 0x0f), 1))
	return out
}

// randomized mutates seeds byte by byte, deterministically.
func randomized(seeds [][]byte, n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var out [][]byte
	for range n {
		m := bytes.Clone(seeds[rng.IntN(len(seeds))])
		for range 1 + rng.IntN(3) {
			if len(m) == 0 {
				break
			}
			switch i := rng.IntN(len(m)); rng.IntN(3) {
			case 0:
				m[i] = byte(rng.Uint32())
			case 1:
				m = append(m[:i:i], m[i+1:]...)
			default:
				m = append(m[:i:i], append([]byte{byte(rng.Uint32())}, m[i:]...)...)
			}
		}
		out = append(out, m)
	}
	return out
}

// checkValue compares a parsed TagValue or FieldValue with its decoding.
func checkValue(t testing.TB, v *Value, want proto.Message) {
	t.Helper()
	got := want.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(v.Raw, got); err != nil || !proto.Equal(got, want) {
		t.Fatalf("value Raw %x decodes to %v (%v), want %v", v.Raw, got, err, want)
	}
	var kind Kind
	var str []byte
	var i int64
	var strs [][]byte
	var ints []int64
	switch x := want.(type) {
	case *modelv1.TagValue:
		switch m := x.GetValue().(type) {
		case *modelv1.TagValue_Null:
			kind = KindNull
		case *modelv1.TagValue_Str:
			kind, str = KindStr, []byte(m.Str.GetValue())
		case *modelv1.TagValue_Int:
			kind, i = KindInt, m.Int.GetValue()
		case *modelv1.TagValue_BinaryData:
			kind, str = KindBinary, m.BinaryData
		case *modelv1.TagValue_StrArray:
			kind = KindStrArray
			for _, s := range m.StrArray.GetValue() {
				strs = append(strs, []byte(s))
			}
		case *modelv1.TagValue_IntArray:
			kind, ints = KindIntArray, m.IntArray.GetValue()
		case *modelv1.TagValue_Timestamp:
			kind = KindTimestamp
			if s, n := v.Time(); s != m.Timestamp.GetSeconds() || n != m.Timestamp.GetNanos() {
				t.Fatalf("timestamp %d.%d, want %v", s, n, m.Timestamp)
			}
		}
	case *modelv1.FieldValue:
		switch m := x.GetValue().(type) {
		case *modelv1.FieldValue_Null:
			kind = KindNull
		case *modelv1.FieldValue_Str:
			kind, str = KindStr, []byte(m.Str.GetValue())
		case *modelv1.FieldValue_Int:
			kind, i = KindInt, m.Int.GetValue()
		case *modelv1.FieldValue_BinaryData:
			kind, str = KindBinary, m.BinaryData
		case *modelv1.FieldValue_Float:
			kind, i = KindFloat, int64(math.Float64bits(m.Float.GetValue()))
		}
	}
	if v.Kind != kind {
		t.Fatalf("%x: kind %v, want %v (%v)", v.Raw, v.Kind, kind, want)
	}
	switch kind {
	case KindStr, KindBinary:
		if !bytes.Equal(v.Bytes, str) {
			t.Fatalf("%x: bytes %q, want %q", v.Raw, v.Bytes, str)
		}
	case KindInt, KindFloat:
		if v.Int != i {
			t.Fatalf("%x: int %d, want %d", v.Raw, v.Int, i)
		}
	case KindStrArray:
		var got [][]byte
		v.StrArray(func(s []byte) { got = append(got, s) })
		if len(got) != len(strs) {
			t.Fatalf("%x: %d strings, want %d", v.Raw, len(got), len(strs))
		}
		for j := range got {
			if !bytes.Equal(got[j], strs[j]) {
				t.Fatalf("%x: string %d %q, want %q", v.Raw, j, got[j], strs[j])
			}
		}
	case KindIntArray:
		var got []int64
		v.IntArray(func(x int64) { got = append(got, x) })
		if len(got) != len(ints) {
			t.Fatalf("%x: ints %v, want %v", v.Raw, got, ints)
		}
		for j := range got {
			if got[j] != ints[j] {
				t.Fatalf("%x: ints %v, want %v", v.Raw, got, ints)
			}
		}
	}
}

func checkTimestamp(t testing.TB, p *Point, ts *timestamppb.Timestamp) {
	t.Helper()
	if (p.Timestamp != nil) != (ts != nil) || p.Seconds != ts.GetSeconds() || p.Nanos != ts.GetNanos() {
		t.Fatalf("timestamp %x %d.%d, want %v", p.Timestamp, p.Seconds, p.Nanos, ts)
	}
}

func checkFamilies(t testing.TB, p *Point, fams []*modelv1.TagFamilyForWrite) {
	t.Helper()
	if len(p.FamEnd) != len(fams) {
		t.Fatalf("%d families, want %d", len(p.FamEnd), len(fams))
	}
	for fi, f := range fams {
		tags := p.Family(fi)
		if len(tags) != len(f.GetTags()) {
			t.Fatalf("family %d: %d tags, want %d", fi, len(tags), len(f.GetTags()))
		}
		for ti, want := range f.GetTags() {
			checkValue(t, &tags[ti], want)
		}
	}
}

// checkPoint compares a parsed element or data point with its decoding,
// and its re-encoding (AppendElement, AppendDataPoint) with the decoding
// without unknown fields.
func checkPoint(t testing.TB, p *Point, want proto.Message) {
	t.Helper()
	switch m := want.(type) {
	case *streamv1.ElementValue:
		if string(p.ElementID) != m.GetElementId() {
			t.Fatalf("element id %q, want %q", p.ElementID, m.GetElementId())
		}
		checkTimestamp(t, p, m.GetTimestamp())
		checkFamilies(t, p, m.GetTagFamilies())
		var back streamv1.ElementValue
		if err := proto.Unmarshal(AppendElement(nil, p), &back); err != nil {
			t.Fatalf("AppendElement: %v", err)
		}
		if back.GetElementId() != m.GetElementId() || !proto.Equal(back.GetTimestamp(), m.GetTimestamp()) || !sameFamilies(back.GetTagFamilies(), m.GetTagFamilies()) {
			t.Fatalf("AppendElement: %v, want %v", &back, m)
		}
	case *measurev1.DataPointValue:
		checkTimestamp(t, p, m.GetTimestamp())
		checkFamilies(t, p, m.GetTagFamilies())
		if len(p.Fields) != len(m.GetFields()) {
			t.Fatalf("%d fields, want %d", len(p.Fields), len(m.GetFields()))
		}
		for i, f := range m.GetFields() {
			checkValue(t, &p.Fields[i], f)
		}
		if p.Version != m.GetVersion() {
			t.Fatalf("version %d, want %d", p.Version, m.GetVersion())
		}
		var back measurev1.DataPointValue
		if err := proto.Unmarshal(AppendDataPoint(nil, p), &back); err != nil {
			t.Fatalf("AppendDataPoint: %v", err)
		}
		if !proto.Equal(back.GetTimestamp(), m.GetTimestamp()) || !sameFamilies(back.GetTagFamilies(), m.GetTagFamilies()) || back.GetVersion() != m.GetVersion() || len(back.GetFields()) != len(m.GetFields()) {
			t.Fatalf("AppendDataPoint: %v, want %v", &back, m)
		}
		for i := range back.GetFields() {
			if !proto.Equal(back.GetFields()[i], m.GetFields()[i]) {
				t.Fatalf("AppendDataPoint field %d: %v, want %v", i, back.GetFields()[i], m.GetFields()[i])
			}
		}
	}
}

func sameFamilies(a, b []*modelv1.TagFamilyForWrite) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i].GetTags()) != len(b[i].GetTags()) {
			return false
		}
		for j := range a[i].GetTags() {
			if !proto.Equal(a[i].GetTags()[j], b[i].GetTags()[j]) {
				return false
			}
		}
	}
	return true
}

// agree checks parse against proto.Unmarshal into ref for b; on success
// and when the parse is exact, check compares the two. A merged parse must
// become exact after a proto round trip.
func agree[M proto.Message](t testing.TB, b []byte, ref M, parse func([]byte) (merged bool, err error), check func(M)) {
	t.Helper()
	merged, err := parse(b)
	perr := proto.Unmarshal(b, ref)
	if (err != nil) != (perr != nil) {
		t.Fatalf("%x: parse error %v, proto.Unmarshal error %v", b, err, perr)
	}
	if err != nil {
		return
	}
	if !merged {
		check(ref)
		return
	}
	canon, err := proto.MarshalOptions{Deterministic: true}.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	if merged, err := parse(canon); err != nil || merged {
		t.Fatalf("%x: canonical form parses merged=%v err=%v", canon, merged, err)
	}
	check(ref)
}

func checkStreamRequest(t testing.TB, b []byte) {
	var r Request
	agree(t, b, new(streamv1.WriteRequest), func(b []byte) (bool, error) {
		err := ParseStreamRequest(b, &r)
		return r.Merged, err
	}, func(want *streamv1.WriteRequest) {
		checkRequest(t, &r, want.GetMessageId(), want.GetMetadata(), want.GetElement())
		if len(r.Spec) != len(want.GetTagFamilySpec()) {
			t.Fatalf("%d specs, want %d", len(r.Spec), len(want.GetTagFamilySpec()))
		}
		for i, s := range want.GetTagFamilySpec() {
			var got streamv1.TagFamilySpec
			if err := proto.Unmarshal(r.Spec[i], &got); err != nil || !proto.Equal(&got, s) {
				t.Fatalf("spec %d: %v (%v), want %v", i, &got, err, s)
			}
		}
	})
}

func checkMeasureRequest(t testing.TB, b []byte) {
	var r Request
	agree(t, b, new(measurev1.WriteRequest), func(b []byte) (bool, error) {
		err := ParseMeasureRequest(b, &r)
		return r.Merged, err
	}, func(want *measurev1.WriteRequest) {
		checkRequest(t, &r, want.GetMessageId(), want.GetMetadata(), want.GetDataPoint())
		if (len(r.Spec) == 1) != (want.GetDataPointSpec() != nil) || len(r.Spec) > 1 {
			t.Fatalf("%d specs, want the spec %v", len(r.Spec), want.GetDataPointSpec())
		}
		if len(r.Spec) == 1 {
			var got measurev1.DataPointSpec
			if err := proto.Unmarshal(r.Spec[0], &got); err != nil || !proto.Equal(&got, want.GetDataPointSpec()) {
				t.Fatalf("spec %v (%v), want %v", &got, err, want.GetDataPointSpec())
			}
		}
	})
}

// point is an ElementValue or a DataPointValue as a typed nil-able message.
type point interface {
	proto.Message
	GetTimestamp() *timestamppb.Timestamp
}

func checkRequest[P point](t testing.TB, r *Request, id uint64, md *commonv1.Metadata, value P) {
	t.Helper()
	if r.MessageID != id {
		t.Fatalf("message id %d, want %d", r.MessageID, id)
	}
	if (r.Metadata != nil) != (md != nil) {
		t.Fatalf("metadata %x, want %v", r.Metadata, md)
	}
	if md != nil {
		var got commonv1.Metadata
		if err := proto.Unmarshal(r.Metadata, &got); err != nil || !proto.Equal(&got, md) {
			t.Fatalf("metadata %v (%v), want %v", &got, err, md)
		}
	}
	present := value.ProtoReflect().IsValid()
	if (r.Value != nil) != present {
		t.Fatalf("value %x, want present=%v", r.Value, present)
	}
	if present {
		checkPoint(t, &r.Point, value)
	}
}

func checkClusterWrite(t testing.TB, b []byte, stream bool) {
	var w ClusterWrite
	parse := func(b []byte, w *ClusterWrite) error { return ParseMeasureWrite(b, w, Options{}) }
	if stream {
		parse = func(b []byte, w *ClusterWrite) error { return ParseStreamWrite(b, w, Options{}) }
	}
	check := func(group, name string, shard uint32, key []byte, rev int64, value point) {
		if string(w.Group) != group || string(w.Name) != name || w.Shard != shard || !bytes.Equal(w.SeriesKey, key) || w.Revision != rev {
			t.Fatalf("%x: parsed %q %q %d %x %d, want %q %q %d %x %d", b, w.Group, w.Name, w.Shard, w.SeriesKey, w.Revision, group, name, shard, key, rev)
		}
		present := value.ProtoReflect().IsValid()
		if (w.Value != nil) != present {
			t.Fatalf("value %x, want present=%v", w.Value, present)
		}
		if present {
			checkPoint(t, &w.Point, value)
		}
	}
	run := func(b []byte) (bool, error) {
		err := parse(b, &w)
		return w.Merged, err
	}
	if stream {
		agree(t, b, new(clusterv1.StreamWrite), run, func(m *clusterv1.StreamWrite) {
			check(m.GetGroup(), m.GetName(), m.GetShardId(), m.GetSeriesKey(), m.GetSchemaModRevision(), m.GetElement())
			if w.Version != m.GetVersion() {
				t.Fatalf("%x: parsed version %d, want %d", b, w.Version, m.GetVersion())
			}
		})
		return
	}
	agree(t, b, new(clusterv1.MeasureWrite), run, func(m *clusterv1.MeasureWrite) {
		check(m.GetGroup(), m.GetName(), m.GetShardId(), m.GetSeriesKey(), m.GetSchemaModRevision(), m.GetDataPoint())
	})
}

func streamRequestSeeds(t testing.TB) [][]byte {
	return [][]byte{
		mustMarshal(t, &streamv1.WriteRequest{Metadata: seedMetadata, Element: seedElement(), MessageId: 9}),
		mustMarshal(t, &streamv1.WriteRequest{Element: seedElement(), MessageId: 1, TagFamilySpec: []*streamv1.TagFamilySpec{
			{Name: "f", TagNames: []string{"a", "b"}}, {Name: "g"},
		}}),
		mustMarshal(t, &streamv1.WriteRequest{MessageId: 2}),
	}
}

func measureRequestSeeds(t testing.TB) [][]byte {
	return [][]byte{
		mustMarshal(t, &measurev1.WriteRequest{Metadata: seedMetadata, DataPoint: seedDataPoint(), MessageId: 9}),
		mustMarshal(t, &measurev1.WriteRequest{DataPoint: seedDataPoint(), MessageId: 1, DataPointSpec: &measurev1.DataPointSpec{
			TagFamilySpec: []*measurev1.TagFamilySpec{{Name: "f", TagNames: []string{"a"}}}, FieldNames: []string{"x", "y"},
		}}),
	}
}

func streamWriteSeeds(t testing.TB) [][]byte {
	return [][]byte{mustMarshal(t, &clusterv1.StreamWrite{
		Group: "g", Name: "n", ShardId: 3, SeriesKey: []byte{1, 2}, Element: seedElement(), SchemaModRevision: 4,
	}), mustMarshal(t, &clusterv1.StreamWrite{Group: "g"})}
}

func measureWriteSeeds(t testing.TB) [][]byte {
	return [][]byte{mustMarshal(t, &clusterv1.MeasureWrite{
		Group: "g", Name: "n", ShardId: 3, SeriesKey: []byte{1, 2}, DataPoint: seedDataPoint(), SchemaModRevision: 4,
	})}
}

// each runs check over every corruption of every seed, and a few thousand
// random mutations.
func each(t *testing.T, seeds [][]byte, check func(testing.TB, []byte)) {
	var all [][]byte
	for _, s := range seeds {
		all = append(all, corruptions(s)...)
	}
	n := 5000
	if testing.Short() {
		n = 200
	}
	all = append(all, randomized(seeds, n)...)
	for _, b := range all {
		check(t, b)
	}
}

func TestStreamRequestMatchesProto(t *testing.T) { each(t, streamRequestSeeds(t), checkStreamRequest) }

func TestMeasureRequestMatchesProto(t *testing.T) {
	each(t, measureRequestSeeds(t), checkMeasureRequest)
}

func TestStreamWriteMatchesProto(t *testing.T) {
	each(t, streamWriteSeeds(t), func(t testing.TB, b []byte) { checkClusterWrite(t, b, true) })
}

func TestMeasureWriteMatchesProto(t *testing.T) {
	each(t, measureWriteSeeds(t), func(t testing.TB, b []byte) { checkClusterWrite(t, b, false) })
}

func TestWriteResponseRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		id    uint64
		st    string
		md    *commonv1.Metadata
		hasMD bool
	}{{0, "", nil, false}, {7, "STATUS_SUCCEED", seedMetadata, true}, {1 << 63, "STATUS_NOT_FOUND", &commonv1.Metadata{}, true}} {
		var md []byte
		if tc.md != nil {
			md = mustMarshal(t, tc.md)
		}
		b := AppendWriteResponse(nil, tc.id, tc.st, md, tc.hasMD)
		want := mustMarshal(t, &streamv1.WriteResponse{MessageId: tc.id, Status: tc.st, Metadata: tc.md})
		if !bytes.Equal(b, want) {
			t.Errorf("AppendWriteResponse %x, proto.Marshal %x", b, want)
		}
		var r WriteResponse
		if err := ParseWriteResponse(b, &r); err != nil || r.MessageID != tc.id || string(r.Status) != tc.st {
			t.Errorf("ParseWriteResponse(%x) = %d %q %v", b, r.MessageID, r.Status, err)
		}
	}
	for _, b := range corruptions(AppendWriteResponse(nil, 7, "STATUS_SUCCEED", mustMarshal(t, seedMetadata), true)) {
		var r WriteResponse
		err := ParseWriteResponse(b, &r)
		var ref streamv1.WriteResponse
		if perr := proto.Unmarshal(b, &ref); (err != nil) != (perr != nil) {
			t.Fatalf("%x: parse %v, proto.Unmarshal %v", b, err, perr)
		}
	}
}

func TestAppendClusterWriteMatchesProtoMarshal(t *testing.T) {
	value := mustMarshal(t, seedElement())
	for _, tc := range []*clusterv1.StreamWrite{
		{Group: "g", Name: "n", ShardId: 3, SeriesKey: []byte{1}, SchemaModRevision: 9, Version: 1 << 60, IndexSpec: []byte{1, 0, 2, 1, 'x', 0}},
		{},
	} {
		b := AppendClusterWrite(nil, tc.Group, tc.Name, tc.ShardId, tc.SeriesKey, value, tc.SchemaModRevision, tc.Version, tc.IndexSpec)
		if len(b) > ClusterWriteSize(tc.Group, tc.Name, tc.SeriesKey, value, tc.IndexSpec) {
			t.Errorf("%d bytes, over ClusterWriteSize", len(b))
		}
		tc.Element = seedElement()
		if want := mustMarshal(t, tc); !bytes.Equal(b, want) {
			t.Errorf("AppendClusterWrite %x, proto.Marshal %x", b, want)
		}
	}
}

func FuzzParseStreamRequest(f *testing.F) {
	for _, s := range streamRequestSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkStreamRequest(t, b) })
}

func FuzzParseMeasureRequest(f *testing.F) {
	for _, s := range measureRequestSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkMeasureRequest(t, b) })
}

func FuzzParseStreamWrite(f *testing.F) {
	for _, s := range streamWriteSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkClusterWrite(t, b, true) })
}

func FuzzParseMeasureWrite(f *testing.F) {
	for _, s := range measureWriteSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkClusterWrite(t, b, false) })
}

// TestSkipValues: a write parsed with SkipValues reads the same envelope,
// element id, timestamp and version, and no values.
func TestSkipValues(t *testing.T) {
	for _, tc := range []struct {
		seeds func(testing.TB) [][]byte
		parse func([]byte, *ClusterWrite, Options) error
	}{{streamWriteSeeds, ParseStreamWrite}, {measureWriteSeeds, ParseMeasureWrite}} {
		for _, b := range tc.seeds(t) {
			var full, skipped ClusterWrite
			if err := tc.parse(b, &full, Options{}); err != nil {
				t.Fatal(err)
			}
			if err := tc.parse(b, &skipped, Options{SkipValues: true}); err != nil {
				t.Fatal(err)
			}
			f, s := &full.Point, &skipped.Point
			if !bytes.Equal(full.Group, skipped.Group) || !bytes.Equal(full.SeriesKey, skipped.SeriesKey) || !bytes.Equal(full.Value, skipped.Value) ||
				!bytes.Equal(f.ElementID, s.ElementID) || f.Seconds != s.Seconds || f.Nanos != s.Nanos || f.Version != s.Version {
				t.Errorf("%x: SkipValues read %+v, the full parse %+v", b, skipped, full)
			}
			if len(s.Tags)+len(s.FamEnd)+len(s.Fields) != 0 {
				t.Errorf("%x: SkipValues read values", b)
			}
		}
	}
}

// TestUnixNano agrees with protobuf's AsTime wherever the time fits int64
// nanoseconds, and says when it does not.
func TestUnixNano(t *testing.T) {
	minT, maxT := time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)
	for _, s := range []int64{0, 1, -1, 1700000000, minT.Unix(), minT.Unix() - 1, maxT.Unix(), maxT.Unix() + 1, math.MaxInt64, math.MinInt64} {
		for _, n := range []int32{0, 1, -1, 999_999_999, -999_999_999, 1e9, -1e9, math.MaxInt32, math.MinInt32, int32(minT.Nanosecond()), int32(maxT.Nanosecond())} {
			got, ok := UnixNano(s, n)
			at := time.Unix(s, int64(n))
			fits := s > math.MinInt64/2 && s < math.MaxInt64/2 && !at.Before(minT) && !at.After(maxT)
			if ok != fits || ok && got != at.UnixNano() {
				t.Errorf("UnixNano(%d, %d) = %d, %v; time.Unix says %v (fits %v)", s, n, got, ok, at, fits)
			}
		}
	}
}
