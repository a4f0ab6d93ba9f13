package pub

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue/internal/framepool"
)

// batchFrame is a StreamRequest carrying a batch, sent under wire.Codec:
// it encodes itself by hand into a pooled buffer that gRPC hands back once
// written. grpc's own path sizes the message, then takes a buffer of the
// next pool tier (1 MB for a 300 KB batch) and zeroes all of it before
// encoding into it: that clearing alone was a sixth of the publisher's CPU.
// The bytes are those proto.Marshal would write (see codec_test.go).
type batchFrame struct{ req *clusterv1.StreamRequest }

var frameBytes framepool.Pool

// MarshalWire implements wire.Marshaler.
func (f batchFrame) MarshalWire() (mem.BufferSlice, error) {
	b := f.req.GetBatch()
	if b == nil || len(b.ProtoReflect().GetUnknown()) > 0 {
		data, err := proto.Marshal(f.req)
		return mem.BufferSlice{mem.SliceBuffer(data)}, err
	}
	inner := batchSize(b)
	size := 1 + protowire.SizeBytes(inner)
	if mem.IsBelowBufferPoolingThreshold(size) {
		return mem.BufferSlice{mem.SliceBuffer(appendBatchFrame(make([]byte, 0, size), b, inner))}, nil
	}
	bp := frameBytes.Get(size)
	*bp = appendBatchFrame((*bp)[:0], b, inner)
	if len(*bp) != size {
		return nil, fmt.Errorf("queue/pub: batch frame encoded to %d bytes, sized %d", len(*bp), size)
	}
	return mem.BufferSlice{mem.NewBuffer(bp, &frameBytes)}, nil
}

// Field numbers of banyandb.cluster.v1.StreamRequest.batch and of Batch.
const (
	fieldRequestBatch  = 2
	fieldBatchID       = 1
	fieldBatchTopic    = 2
	fieldBatchMessages = 3
	fieldBatchDeadline = 4
	fieldBatchTimeout  = 5
)

func batchSize(b *clusterv1.Batch) int {
	n := 0
	if b.BatchId != 0 {
		n += 1 + protowire.SizeVarint(b.BatchId)
	}
	if b.Topic != "" {
		n += 1 + protowire.SizeBytes(len(b.Topic))
	}
	for _, m := range b.Messages {
		n += 1 + protowire.SizeBytes(len(m))
	}
	if b.DeadlineUnixNano != 0 {
		n += 1 + protowire.SizeVarint(uint64(b.DeadlineUnixNano))
	}
	if b.TimeoutNanos != 0 {
		n += 1 + protowire.SizeVarint(uint64(b.TimeoutNanos))
	}
	return n
}

// appendBatchFrame appends a StreamRequest holding b, whose encoding is
// inner (batchSize) bytes long, fields in number order and zero values
// omitted, as proto.Marshal writes it.
func appendBatchFrame(buf []byte, b *clusterv1.Batch, inner int) []byte {
	buf = protowire.AppendTag(buf, fieldRequestBatch, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(inner))
	if b.BatchId != 0 {
		buf = protowire.AppendTag(buf, fieldBatchID, protowire.VarintType)
		buf = protowire.AppendVarint(buf, b.BatchId)
	}
	if b.Topic != "" {
		buf = protowire.AppendTag(buf, fieldBatchTopic, protowire.BytesType)
		buf = protowire.AppendString(buf, b.Topic)
	}
	for _, m := range b.Messages {
		buf = protowire.AppendTag(buf, fieldBatchMessages, protowire.BytesType)
		buf = protowire.AppendBytes(buf, m)
	}
	if b.DeadlineUnixNano != 0 {
		buf = protowire.AppendTag(buf, fieldBatchDeadline, protowire.VarintType)
		buf = protowire.AppendVarint(buf, uint64(b.DeadlineUnixNano))
	}
	if b.TimeoutNanos != 0 {
		buf = protowire.AppendTag(buf, fieldBatchTimeout, protowire.VarintType)
		buf = protowire.AppendVarint(buf, uint64(b.TimeoutNanos))
	}
	return buf
}
