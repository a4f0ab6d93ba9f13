package pub

import (
	"bytes"
	"testing"

	"github.com/banyand-io/banyand/pkg/wire"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
)

// The hand-written batch encoding writes exactly proto.Marshal's bytes.
func TestCodecMatchesProtoMarshal(t *testing.T) {
	big := make([][]byte, 1024)
	for i := range big {
		big[i] = bytes.Repeat([]byte{byte(i)}, 300)
	}
	cases := map[string]*clusterv1.Batch{
		"empty":             {},
		"all fields":        {BatchId: 7, Topic: "stream-write", Messages: [][]byte{[]byte("a"), {}, []byte("ccc")}, DeadlineUnixNano: 1 << 60, TimeoutNanos: 3e10},
		"negative deadline": {BatchId: 1, DeadlineUnixNano: -5, TimeoutNanos: -1},
		"only a timeout":    {BatchId: 1, TimeoutNanos: 1},
		"only messages":     {Messages: [][]byte{nil, nil}},
		"big batch":         {BatchId: 1 << 40, Topic: "measure-write", Messages: big, DeadlineUnixNano: 1764500000000000000},
	}
	c := wire.Codec()
	for name, b := range cases {
		req := &clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Batch{Batch: b}}
		want, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Marshal(batchFrame{req})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got.Materialize(), want) {
			t.Errorf("%s: encoding differs from proto.Marshal (%d vs %d bytes)", name, got.Len(), len(want))
		}
		got.Free()
	}
	// Other frames go through the standard codec.
	hello := &clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Hello{Hello: &clusterv1.Hello{ProtocolVersion: 1, NodeName: "n"}}}
	want, _ := proto.Marshal(hello)
	got, err := c.Marshal(hello)
	if err != nil || !bytes.Equal(got.Materialize(), want) {
		t.Fatalf("hello: %v, %x want %x", err, got.Materialize(), want)
	}
}

// timeout_nanos is the time left from the send to the deadline, at least
// 1 once the deadline has passed, and absent for a batch without one.
func TestTimeLeft(t *testing.T) {
	for _, tc := range []struct{ deadline, sentAt, want int64 }{
		{0, 100, 0},
		{1000, 100, 900},
		{100, 100, 1},
		{50, 100, 1},
	} {
		if got := timeLeft(tc.deadline, tc.sentAt); got != tc.want {
			t.Errorf("timeLeft(%d, %d) = %d, want %d", tc.deadline, tc.sentAt, got, tc.want)
		}
	}
}
