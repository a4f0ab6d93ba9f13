package bench

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

func testMessages(t *testing.T, entities int) *messages {
	t.Helper()
	cfg := Config{Group: "g", Name: "n", Entities: entities, PayloadBytes: 100}
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

func refFamilies(m *messages, seq int64) []*modelv1.TagFamilyForWrite {
	return []*modelv1.TagFamilyForWrite{
		{Tags: m.entityTags(m.entity(seq))},
		{Tags: []*modelv1.TagValue{{Value: &modelv1.TagValue_BinaryData{BinaryData: m.payload}}}},
	}
}

// The hand-encoded requests are byte for byte what proto.Marshal writes
// for the same messages built as structs, with and without the entity
// cache, for the first request of a stream (with metadata) and the rest.
func TestWireRequestsMatchProtoMarshal(t *testing.T) {
	seqs := []int64{0, 1, 999, 1000, 1001, 123_456_789}
	for _, entities := range []int{1000, maxCachedEntities + 1} {
		m := testMessages(t, entities)
		// The base time on a whole second gives timestamps with zero
		// nanos, which proto.Marshal leaves out.
		m.baseMillis -= m.baseMillis % 1000
		for _, seq := range seqs {
			for _, id := range []uint64{1, 2, 1 << 40} {
				var md *commonv1.Metadata
				if id == 1 {
					md = m.md
				}
				sreq := &streamv1.WriteRequest{Metadata: md, MessageId: id, Element: &streamv1.ElementValue{
					ElementId: m.elementID(seq), Timestamp: refTimestamp(m, seq), TagFamilies: refFamilies(m, seq),
				}}
				mreq := &measurev1.WriteRequest{Metadata: md, MessageId: id, DataPoint: &measurev1.DataPointValue{
					Timestamp: refTimestamp(m, seq), TagFamilies: refFamilies(m, seq),
					Fields: []*modelv1.FieldValue{
						{Value: &modelv1.FieldValue_Int{Int: &modelv1.Int{Value: seq}}},
						{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: m.nonce}}},
					},
				}}
				for name, c := range map[string]struct {
					want proto.Message
					got  []byte
				}{
					"stream":  {sreq, m.streamRequest(id, seq, id == 1)},
					"measure": {mreq, m.measureRequest(id, seq, id == 1)},
				} {
					want, err := proto.Marshal(c.want)
					if err != nil {
						t.Fatal(err)
					}
					if string(c.got) != string(want) {
						t.Fatalf("%s entities %d seq %d id %d: encoded %x, proto.Marshal %x", name, entities, seq, id, c.got, want)
					}
				}
			}
		}
	}
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
