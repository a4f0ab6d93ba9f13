package bench

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

// testMessages builds a run's messages of the light shape; flushSize > 0
// gives them the spec.
func testMessages(t *testing.T, kind string, entities int, flushSize int64) *messages {
	t.Helper()
	return shapedMessages(t, kind, ShapeLight, entities, flushSize)
}

func shapedMessages(t *testing.T, kind, shape string, entities int, flushSize int64) *messages {
	t.Helper()
	cfg := Config{Kind: kind, Shape: shape, Group: "g", Name: "n", Entities: entities, PayloadBytes: 100, FlushSize: flushSize}
	m, err := newMessages(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func refTimestamp(m *messages, seq int64) *timestamppb.Timestamp {
	ms := m.millis(seq)
	return &timestamppb.Timestamp{Seconds: ms / 1000, Nanos: int32(ms%1000) * 1e6}
}

// refSchemaFamilies are the tag families of m's stream or measure schema.
func refSchemaFamilies(m *messages) []*databasev1.TagFamilySpec {
	if m.measure {
		return measureSchema(m.md, m.shape).GetTagFamilies()
	}
	return streamSchema(m.md, m.shape).GetTagFamilies()
}

// refTagsByName are message seq's tag values by tag name.
func refTagsByName(m *messages, seq int64) map[string]*modelv1.TagValue {
	byName := map[string]*modelv1.TagValue{}
	for i, v := range m.entityTags(m.entity(seq)) {
		byName[entityTagSpecs(m.shape)[i].GetName()] = v
	}
	for i, v := range m.data {
		byName[dataTagSpecs(m.shape)[i].GetName()] = v
	}
	return byName
}

// refSpec is the spec's families and tag names: the schema's, each sorted
// by name, as OAP sends them.
func refSpec(m *messages) (names []string, tags [][]string) {
	fams := slices.Clone(refSchemaFamilies(m))
	slices.SortFunc(fams, func(a, b *databasev1.TagFamilySpec) int { return strings.Compare(a.GetName(), b.GetName()) })
	for _, f := range fams {
		var ts []string
		for _, t := range f.GetTags() {
			ts = append(ts, t.GetName())
		}
		slices.Sort(ts)
		names, tags = append(names, f.GetName()), append(tags, ts)
	}
	return names, tags
}

// refFamilies are message seq's tag families in schema order or, with the
// spec, in its alphabetical order: data, then the entity family, each
// family's tags by name.
func refFamilies(m *messages, seq int64) []*modelv1.TagFamilyForWrite {
	byName := refTagsByName(m, seq)
	var out []*modelv1.TagFamilyForWrite
	if m.spec {
		_, tags := refSpec(m)
		for _, names := range tags {
			f := &modelv1.TagFamilyForWrite{}
			for _, n := range names {
				f.Tags = append(f.Tags, byName[n])
			}
			out = append(out, f)
		}
		return out
	}
	for _, fam := range refSchemaFamilies(m) {
		f := &modelv1.TagFamilyForWrite{}
		for _, t := range fam.GetTags() {
			f.Tags = append(f.Tags, byName[t.GetName()])
		}
		out = append(out, f)
	}
	return out
}

func refFields(m *messages, seq int64) []*modelv1.FieldValue {
	value := &modelv1.FieldValue{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: seq}}}
	score := &modelv1.FieldValue{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: m.nonce}}}
	if m.spec {
		return []*modelv1.FieldValue{score, value}
	}
	return []*modelv1.FieldValue{value, score}
}

// refStreamSpec and refMeasureSpec are the specs a flush's first request
// carries, as OAP sends them.
func refStreamSpec(m *messages) []*streamv1.TagFamilySpec {
	var out []*streamv1.TagFamilySpec
	names, tags := refSpec(m)
	for i, n := range names {
		out = append(out, &streamv1.TagFamilySpec{Name: n, TagNames: tags[i]})
	}
	return out
}

func refMeasureSpec(m *messages) *measurev1.DataPointSpec {
	spec := &measurev1.DataPointSpec{FieldNames: []string{fieldScore, fieldValue}}
	names, tags := refSpec(m)
	for i, n := range names {
		spec.TagFamilySpec = append(spec.TagFamilySpec, &measurev1.TagFamilySpec{Name: n, TagNames: tags[i]})
	}
	return spec
}

// The hand-encoded requests are byte for byte what proto.Marshal writes
// for the same messages built as structs, of either shape, with and
// without the entity cache, for the first request of a stream (with
// metadata) and the rest, without the spec and with it (--flush-size).
func TestWireRequestsMatchProtoMarshal(t *testing.T) {
	seqs := []int64{0, 1, 999, 1000, 1001, 123_456_789}
	for _, shape := range []string{ShapeRealistic, ShapeLight} {
		for _, kind := range []string{KindStream, KindMeasure} {
			for _, entities := range []int{1000, maxCachedEntities + 1} {
				for _, flushSize := range []int64{0, 10} {
					m := shapedMessages(t, kind, shape, entities, flushSize)
					// The base time on a whole second gives timestamps with zero
					// nanos, which proto.Marshal leaves out.
					m.baseMillis -= m.baseMillis % 1000
					for _, seq := range seqs {
						for _, id := range []uint64{1, 2, 1 << 40} {
							want, err := proto.Marshal(refRequest(m, id, seq))
							if err != nil {
								t.Fatal(err)
							}
							got := m.streamRequest(id, seq, id == 1)
							if kind == KindMeasure {
								got = m.measureRequest(id, seq, id == 1)
							}
							if string(got) != string(want) {
								t.Fatalf("%s %s entities %d flush size %d seq %d id %d: encoded %x, proto.Marshal %x", shape, kind, entities, flushSize, seq, id, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// refRequest is message seq with id built as a struct: the first of a
// stream (id 1) with metadata and, with the spec, the spec.
func refRequest(m *messages, id uint64, seq int64) proto.Message {
	var md *commonv1.Metadata
	withSpec := id == 1 && m.spec
	if id == 1 {
		md = m.md
	}
	if m.measure {
		req := &measurev1.WriteRequest{Metadata: md, MessageId: id, DataPoint: &measurev1.DataPointValue{
			Timestamp: refTimestamp(m, seq), TagFamilies: refFamilies(m, seq), Fields: refFields(m, seq),
		}}
		if withSpec {
			req.DataPointSpec = refMeasureSpec(m)
		}
		return req
	}
	req := &streamv1.WriteRequest{Metadata: md, MessageId: id, Element: &streamv1.ElementValue{
		ElementId: m.elementID(seq), Timestamp: refTimestamp(m, seq), TagFamilies: refFamilies(m, seq),
	}}
	if withSpec {
		req.TagFamilySpec = refStreamSpec(m)
	}
	return req
}

func TestWireResponseParse(t *testing.T) {
	c := wire.Codec()
	for _, resp := range []*streamv1.WriteResponse{
		{MessageId: 7, Status: statusSucceed, Metadata: &commonv1.Metadata{Group: "g", Name: "n"}},
		{MessageId: 1 << 50, Status: "STATUS_INVALID_TIMESTAMP"},
		{},
	} {
		b, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		// One buffer and split over two, as gRPC may hand it over.
		for _, data := range []mem.BufferSlice{{mem.SliceBuffer(b)}, {mem.SliceBuffer(b[:len(b)/2]), mem.SliceBuffer(b[len(b)/2:])}} {
			var got wireResponse
			if err := c.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if got.id != resp.GetMessageId() || got.status != resp.GetStatus() {
				t.Fatalf("parsed %+v from %v", got, resp)
			}
		}
	}
	var r wireResponse
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x08})}, &r); err == nil {
		t.Fatal("a truncated response parsed without error")
	}
}

// With --flush-size the spec names tag families, tags and fields in
// alphabetical order, unlike the schema, and each value sits where the
// spec names it: read by the spec's names, every value is its tag's.
func TestSpecNamesValuesAlphabetically(t *testing.T) {
	const seq = 4321
	var m *messages
	var want map[string]*modelv1.TagValue
	type family struct {
		name string
		tags []string
	}
	check := func(kind string, spec []family, values []*modelv1.TagFamilyForWrite, schema []*databasev1.TagFamilySpec) {
		t.Helper()
		if !slices.IsSortedFunc(spec, func(a, b family) int { return strings.Compare(a.name, b.name) }) {
			t.Errorf("%s spec families %v are not in alphabetical order", kind, spec)
		}
		if len(spec) != len(values) {
			t.Fatalf("%s: %d spec families, %d written", kind, len(spec), len(values))
		}
		inSchemaOrder := true
		for i, f := range spec {
			if !slices.IsSorted(f.tags) {
				t.Errorf("%s spec family %s: tags %v are not in alphabetical order", kind, f.name, f.tags)
			}
			inSchemaOrder = inSchemaOrder && f.name == schema[i].GetName() && f.tags[0] == schema[i].GetTags()[0].GetName()
			if len(f.tags) != len(values[i].GetTags()) {
				t.Fatalf("%s family %s: %d spec tags, %d values", kind, f.name, len(f.tags), len(values[i].GetTags()))
			}
			for j, name := range f.tags {
				if got := values[i].GetTags()[j]; !proto.Equal(got, want[name]) {
					t.Errorf("%s tag %s/%s: value %v, want %v", kind, f.name, name, got, want[name])
				}
			}
		}
		if inSchemaOrder {
			t.Errorf("%s spec %v is in the schema's order: the server's spec path would place nothing", kind, spec)
		}
	}

	for _, shape := range []string{ShapeRealistic, ShapeLight} {
		m = shapedMessages(t, KindStream, shape, 1000, 10)
		want = refTagsByName(m, seq)
		var sreq streamv1.WriteRequest
		if err := proto.Unmarshal(m.streamRequest(1, seq, true), &sreq); err != nil {
			t.Fatal(err)
		}
		var sspec []family
		for _, f := range sreq.GetTagFamilySpec() {
			sspec = append(sspec, family{f.GetName(), f.GetTagNames()})
		}
		check(shape+" stream", sspec, sreq.GetElement().GetTagFamilies(), streamSchema(m.md, shape).GetTagFamilies())

		m = shapedMessages(t, KindMeasure, shape, 1000, 10)
		want = refTagsByName(m, seq)
		var mreq measurev1.WriteRequest
		if err := proto.Unmarshal(m.measureRequest(1, seq, true), &mreq); err != nil {
			t.Fatal(err)
		}
		var mspec []family
		for _, f := range mreq.GetDataPointSpec().GetTagFamilySpec() {
			mspec = append(mspec, family{f.GetName(), f.GetTagNames()})
		}
		check(shape+" measure", mspec, mreq.GetDataPoint().GetTagFamilies(), measureSchema(m.md, shape).GetTagFamilies())
		fields := mreq.GetDataPointSpec().GetFieldNames()
		if !slices.IsSorted(fields) || fields[0] == measureSchema(m.md, shape).GetFields()[0].GetName() {
			t.Errorf("measure spec fields %v: want alphabetical, unlike the schema's order", fields)
		}
		wantFields := map[string]*modelv1.FieldValue{
			fieldValue: {Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: seq}}},
			fieldScore: {Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: m.nonce}}},
		}
		if len(fields) != len(mreq.GetDataPoint().GetFields()) {
			t.Fatalf("%d spec fields, %d values", len(fields), len(mreq.GetDataPoint().GetFields()))
		}
		for i, name := range fields {
			if got := mreq.GetDataPoint().GetFields()[i]; !proto.Equal(got, wantFields[name]) {
				t.Errorf("field %s: value %v, want %v", name, got, wantFields[name])
			}
		}
	}
}

// A trace run's hand-encoded requests are what proto.Marshal writes for
// the same request built as a struct: tags in the schema's order or, with
// the spec, in its alphabetical order, which names each value's tag.
func TestTraceRequestsMatchProtoMarshal(t *testing.T) {
	for _, flushSize := range []int64{0, 10} {
		m := testMessages(t, KindTrace, 100, flushSize)
		m.spansPerTrace = 3
		m.baseMillis -= m.baseMillis % 1000
		schema := traceSchema(m.md).GetTags()
		for _, seq := range []int64{0, 1, 999, 1000, 123_456_789} {
			for _, id := range []uint64{1, 2, 1 << 40} {
				e := m.entity(seq)
				byName := map[string]*modelv1.TagValue{
					tagTraceID:   {Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: m.traceID(seq)}}},
					tagSpanID:    {Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: m.elementID(seq)}}},
					tagService:   {Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: m.entityTags(e)[0].GetStr().GetValue()}}},
					tagInstance:  m.entityTags(e)[1],
					tagEndpoint:  {Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "/endpoint-" + strconv.FormatInt(seq%8, 10)}}},
					tagStartTime: {Value: &modelv1.TagValue_Timestamp{Timestamp: refTimestamp(m, seq)}},
					tagDuration:  {Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: seq % 1000}}},
					tagIsError:   {Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: boolInt(seq%50 == 0)}}},
				}
				req := &tracev1.WriteRequest{Span: m.payload, Version: id}
				names := make([]string, 0, len(schema))
				for _, tag := range schema {
					names = append(names, tag.GetName())
				}
				if m.spec {
					slices.Sort(names)
					if id == 1 {
						req.TagSpec = &tracev1.TagSpec{TagNames: names}
					}
				}
				for _, n := range names {
					req.Tags = append(req.Tags, byName[n])
				}
				if id == 1 {
					req.Metadata = m.md
				}
				want, err := proto.Marshal(req)
				if err != nil {
					t.Fatal(err)
				}
				if got := m.traceRequest(id, seq, id == 1); string(got) != string(want) {
					t.Fatalf("flush size %d seq %d id %d: encoded %x, proto.Marshal %x", flushSize, seq, id, got, want)
				}
			}
		}
	}
}
