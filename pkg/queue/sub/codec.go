package sub

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	protoapi "google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
)

// recvFrame is what the receive loop reads into: the request and, when its
// batch aliases a pooled buffer, that buffer, to release once acked. It
// decodes itself under wire.Codec: a frame carrying a Batch is decoded
// without copying each message. The frame is copied once into a pooled
// buffer (see frameBuf) and every message is a slice of it, so a batch
// allocates next to nothing (the per-message copies were a third of the
// server's CPU, and a fresh buffer per frame most of its garbage).
type recvFrame struct {
	req clusterv1.StreamRequest
	buf *frameBuf
}

// UnmarshalWire implements wire.Unmarshaler.
func (f *recvFrame) UnmarshalWire(data mem.BufferSlice) error {
	fb := getFrameBuf(data.Len())
	data.CopyTo(fb.b)
	aliased, err := decodeStreamRequest(fb.b, &f.req, fb)
	if aliased {
		f.buf = fb
	} else {
		fb.release()
	}
	return err
}

var errMalformed = errors.New("malformed StreamRequest")

// decodeStreamRequest decodes buf into req and reports whether req aliases
// buf: a frame with exactly one batch field has its messages sliced from
// buf, in fb's message list when fb is not nil. Anything else is left to
// proto.Unmarshal, which copies; the result is the same either way.
func decodeStreamRequest(buf []byte, req *clusterv1.StreamRequest, fb *frameBuf) (aliased bool, err error) {
	batch, ok := soleBatchField(buf)
	if !ok {
		if err := protoapi.Unmarshal(buf, req); err != nil {
			return false, fmt.Errorf("%w: %w", errMalformed, err)
		}
		return false, nil
	}
	b := new(clusterv1.Batch)
	if fb != nil {
		b.Messages = fb.msgs[:0]
	}
	if err := decodeBatch(batch, b); err != nil {
		return false, err
	}
	if fb != nil {
		fb.msgs = b.Messages
	}
	req.Reset()
	req.Frame = &clusterv1.StreamRequest_Batch{Batch: b}
	return true, nil
}

// soleBatchField returns the contents of field 2 (batch) if it is the only
// field of buf.
func soleBatchField(buf []byte) ([]byte, bool) {
	var batch []byte
	seen := false
	for len(buf) > 0 {
		num, typ, n := protowire.ConsumeTag(buf)
		if n < 0 || num != 2 || typ != protowire.BytesType || seen {
			return nil, false
		}
		buf = buf[n:]
		v, m := protowire.ConsumeBytes(buf)
		if m < 0 {
			return nil, false
		}
		batch, seen = v, true
		buf = buf[m:]
	}
	return batch, seen
}

// decodeBatch decodes a Batch with proto3 semantics (last scalar wins,
// unknown fields skipped), aliasing buf for messages.
func decodeBatch(buf []byte, b *clusterv1.Batch) error {
	count := 0
	for rest := buf; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return fmt.Errorf("%w: batch: %w", errMalformed, protowire.ParseError(n))
		}
		if !num.IsValid() { // ConsumeTag lets numbers above the maximum through
			return fmt.Errorf("%w: batch: invalid field number %d", errMalformed, num)
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			return fmt.Errorf("%w: batch field %d: %w", errMalformed, num, protowire.ParseError(m))
		}
		if num == 3 && typ == protowire.BytesType {
			count++
		}
		rest = rest[n+m:]
	}
	if count > cap(b.Messages) {
		b.Messages = make([][]byte, 0, count)
	}
	for len(buf) > 0 {
		num, typ, n := protowire.ConsumeTag(buf)
		buf = buf[n:]
		var m int
		switch {
		case num == 1 && typ == protowire.VarintType:
			b.BatchId, m = protowire.ConsumeVarint(buf)
		case num == 2 && typ == protowire.BytesType:
			var v []byte
			v, m = protowire.ConsumeBytes(buf)
			if !utf8.Valid(v) {
				return fmt.Errorf("%w: batch topic is not valid UTF-8", errMalformed)
			}
			b.Topic = string(v)
		case num == 3 && typ == protowire.BytesType:
			var v []byte
			v, m = protowire.ConsumeBytes(buf)
			// Cap the slice so a listener appending to a message cannot
			// overwrite its neighbour.
			b.Messages = append(b.Messages, v[:len(v):len(v)])
		case num == 4 && typ == protowire.VarintType:
			var v uint64
			v, m = protowire.ConsumeVarint(buf)
			b.DeadlineUnixNano = int64(v)
		case num == 5 && typ == protowire.VarintType:
			var v uint64
			v, m = protowire.ConsumeVarint(buf)
			b.TimeoutNanos = int64(v)
		default:
			m = protowire.ConsumeFieldValue(num, typ, buf)
		}
		if m < 0 {
			return fmt.Errorf("%w: batch field %d: %w", errMalformed, num, protowire.ParseError(m))
		}
		buf = buf[m:]
	}
	return nil
}
