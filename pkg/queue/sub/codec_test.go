package sub

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
)

func batchReq(b *clusterv1.Batch) []byte {
	out, err := proto.Marshal(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Batch{Batch: b}})
	if err != nil {
		panic(err)
	}
	return out
}

func codecSeeds() [][]byte {
	hello, _ := proto.Marshal(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Hello{Hello: &clusterv1.Hello{ProtocolVersion: 1, NodeName: "n"}}})
	full := batchReq(&clusterv1.Batch{BatchId: 7, Topic: "stream-write", Messages: [][]byte{[]byte("a"), {}, []byte("ccc")}, DeadlineUnixNano: -5, TimeoutNanos: 3e10})
	// An unknown field inside the batch, and the batch field twice.
	inner := protowire.AppendTag(nil, 9, protowire.VarintType)
	inner = protowire.AppendVarint(inner, 1)
	inner = append(inner, 0x08, 0x03) // batch_id = 3
	withUnknown := protowire.AppendTag(nil, 2, protowire.BytesType)
	withUnknown = protowire.AppendBytes(withUnknown, inner)
	return [][]byte{
		nil, hello, full, append(full, full...), withUnknown,
		batchReq(&clusterv1.Batch{}), {0x12, 0x05, 0x1a}, {0x12, 0x02, 0x12, 0x01, 0xff},
	}
}

// FuzzDecodeStreamRequest: the zero-copy decoder agrees with proto.Unmarshal
// on every input: same error-or-not, same known fields. It decodes into
// pooled frame buffers as the server does, so buffers and message lists
// left by earlier inputs are reused.
func FuzzDecodeStreamRequest(f *testing.F) {
	for _, s := range codecSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want, got clusterv1.StreamRequest
		wantErr := proto.Unmarshal(in, &want)
		fb := getFrameBuf(len(in))
		defer fb.release()
		copy(fb.b, in)
		_, gotErr := decodeStreamRequest(fb.b, &got, fb)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("proto.Unmarshal: %v; decodeStreamRequest: %v", wantErr, gotErr)
		}
		if wantErr != nil {
			return
		}
		if want.GetHello() != nil {
			if !proto.Equal(want.GetHello(), got.GetHello()) {
				t.Fatalf("hello %v, want %v", got.GetHello(), want.GetHello())
			}
			return
		}
		wb, gb := want.GetBatch(), got.GetBatch()
		if (wb == nil) != (gb == nil) || wb.GetBatchId() != gb.GetBatchId() || wb.GetTopic() != gb.GetTopic() ||
			wb.GetDeadlineUnixNano() != gb.GetDeadlineUnixNano() || wb.GetTimeoutNanos() != gb.GetTimeoutNanos() ||
			len(wb.GetMessages()) != len(gb.GetMessages()) {
			t.Fatalf("batch %v, want %v", gb, wb)
		}
		for i := range wb.GetMessages() {
			if !bytes.Equal(wb.GetMessages()[i], gb.GetMessages()[i]) {
				t.Fatalf("message %d: %q, want %q", i, gb.GetMessages()[i], wb.GetMessages()[i])
			}
		}
	})
}

func TestDecodeAliasesAndCaps(t *testing.T) {
	in := batchReq(&clusterv1.Batch{Topic: "t", Messages: [][]byte{[]byte("ab"), []byte("cd")}})
	var req clusterv1.StreamRequest
	if _, err := decodeStreamRequest(in, &req, nil); err != nil {
		t.Fatal(err)
	}
	msgs := req.GetBatch().GetMessages()
	_ = append(msgs[0], 'X') // must reallocate, not overwrite "cd"
	if string(msgs[1]) != "cd" {
		t.Fatalf("appending to message 0 changed message 1 to %q", msgs[1])
	}
}

func TestFrameBufReuse(t *testing.T) {
	// A reused buffer's batch starts with no messages of the last one.
	in := batchReq(&clusterv1.Batch{Topic: "t", Messages: [][]byte{[]byte("a"), []byte("b"), []byte("c")}})
	fb := getFrameBuf(len(in))
	copy(fb.b, in)
	var req clusterv1.StreamRequest
	if aliased, err := decodeStreamRequest(fb.b, &req, fb); err != nil || !aliased {
		t.Fatalf("decode: aliased %v, %v", aliased, err)
	}
	fb.release()
	in = batchReq(&clusterv1.Batch{Topic: "t", Messages: [][]byte{[]byte("z")}})
	fb = getFrameBuf(len(in))
	defer fb.release()
	copy(fb.b, in)
	if _, err := decodeStreamRequest(fb.b, &req, fb); err != nil {
		t.Fatal(err)
	}
	if got := req.GetBatch().GetMessages(); len(got) != 1 || string(got[0]) != "z" {
		t.Fatalf("messages after reuse: %q", got)
	}
	// A Hello is copied out by proto.Unmarshal: nothing aliases the buffer.
	hello, _ := proto.Marshal(&clusterv1.StreamRequest{Frame: &clusterv1.StreamRequest_Hello{Hello: &clusterv1.Hello{NodeName: "n"}}})
	if aliased, err := decodeStreamRequest(hello, &req, nil); err != nil || aliased {
		t.Fatalf("hello: aliased %v, %v", aliased, err)
	}
}
