package liaison

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"

	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// appendWriteResponse writes proto.Marshal's bytes for the same response.
func TestAppendWriteResponseMatchesProtoMarshal(t *testing.T) {
	md := &commonv1.Metadata{Group: "g", Name: "s", ModRevision: 42}
	cases := []*streamv1.WriteResponse{
		{},
		{MessageId: 1, Status: "STATUS_SUCCEED", Metadata: md},
		{MessageId: 1 << 63, Status: "STATUS_INVALID_TIMESTAMP"},
		{Metadata: &commonv1.Metadata{}}, // set and empty: still on the wire
		{Status: "STATUS_NOT_FOUND", Metadata: md},
	}
	for _, r := range cases {
		want, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var mdBytes []byte
		if r.Metadata != nil {
			mdBytes = mustMarshal(t, r.Metadata)
		}
		got := appendWriteResponse(nil, r.GetMessageId(), r.GetStatus(), mdBytes, r.Metadata != nil)
		if !bytes.Equal(got, want) {
			t.Errorf("%v: %x, want %x", r, got, want)
		}
	}
}

// The write path answers the same through ServerCodec and through grpc's
// own proto codec (a server that does not install ServerCodec): fast and
// slow path requests, metadata omitted after the first, bad requests.
func TestWriteCodecsAgree(t *testing.T) {
	seeds := streamSeeds(t)
	var raw [][]byte
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		if proto.Unmarshal(seeds[name], new(streamv1.WriteRequest)) == nil { // one that does not ends the stream
			raw = append(raw, seeds[name])
		}
	}
	raw = append(raw,
		mustMarshal(t, &streamv1.WriteRequest{Element: el(ts0, scalarBase(), extra()), MessageId: 77}), // metadata omitted
		mustMarshal(t, &streamv1.WriteRequest{}),
		[]byte{0x0a, 0xff}, // does not decode: ends the stream
	)
	run := func(c encoding.CodecV2) []*streamv1.WriteResponse {
		q := &fakeQueue{}
		svc := newTestServices(t, q)
		srv := &fakeStream[streamv1.WriteRequest, streamv1.WriteResponse]{ctx: context.Background(), codec: c, in: slices.Clone(raw)}
		_ = svc.Stream.Write(srv)
		return srv.out
	}
	std, ours := run(encoding.GetCodecV2("proto")), run(ServerCodec())
	if len(std) < len(raw)-1 || len(std) != len(ours) {
		t.Fatalf("%d answers with grpc's codec, %d with ServerCodec", len(std), len(ours))
	}
	for i := range std {
		if !proto.Equal(std[i], ours[i]) {
			t.Errorf("answer %d: %v with grpc's codec, %v with ServerCodec", i, std[i], ours[i])
		}
	}
}
