package liaison

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"
)

// wireRequest receives one write request as its wire bytes. It is an
// Empty, so under grpc's own codec every field lands in its unknown fields
// (a parse and a copy); ServerCodec fills raw with no parse, and with no
// copy either when the message arrived in one buffer (a write request
// almost always does): raw then aliases grpc's pooled buffer, held until
// release.
type wireRequest struct {
	emptypb.Empty
	raw  []byte
	held mem.BufferSlice // raw's buffer, returned to grpc's pool by release
}

// release gives the received buffer back. Nothing may use raw, or slices
// of it, afterwards.
func (r *wireRequest) release() {
	if r.held != nil {
		r.held.Free()
		r.held, r.raw = nil, nil
	}
}

func (r *wireRequest) bytes() []byte {
	if r.raw != nil {
		return r.raw
	}
	return r.ProtoReflect().GetUnknown()
}

// wireResponse sends bytes already encoded as a write response. As an
// Empty with those bytes as its unknown fields it encodes to the same
// bytes under grpc's own codec; ServerCodec skips the reflection.
type wireResponse struct {
	emptypb.Empty
	raw []byte
}

func (r *wireResponse) set(b []byte) {
	r.raw = b
	r.ProtoReflect().SetUnknown(b)
}

// ServerCodec is grpc's proto codec with the write path's shortcuts: a
// wireRequest is filled with the message's bytes as received and a
// wireResponse is sent as its bytes. Install it on the client-facing server
// with grpc.ForceServerCodecV2; every other message is grpc's business.
func ServerCodec() encoding.CodecV2 { return serverCodec{std: encoding.GetCodecV2(proto.Name)} }

type serverCodec struct{ std encoding.CodecV2 }

func (c serverCodec) Name() string { return proto.Name }

func (c serverCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*wireResponse); ok {
		return mem.BufferSlice{mem.SliceBuffer(r.raw)}, nil
	}
	return c.std.Marshal(v)
}

func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*wireRequest); ok {
		if len(data) == 1 && data.Len() > 0 {
			// grpc frees data once Unmarshal returns: the Ref keeps the
			// buffer until release.
			data.Ref()
			r.raw, r.held = data[0].ReadOnlyData(), data
			return nil
		}
		r.raw = data.Materialize()
		if r.raw == nil {
			r.raw = []byte{} // an empty message: present, no fields
		}
		return nil
	}
	return c.std.Unmarshal(data, v)
}

// appendWriteResponse encodes a stream.v1 or measure.v1 WriteResponse (same
// field numbers: message_id 1, status 2, metadata 3) the way proto.Marshal
// encodes the struct. metadata is the Metadata's encoding; hasMetadata says
// whether the field is set (it may be set and empty).
func appendWriteResponse(b []byte, messageID uint64, status string, metadata []byte, hasMetadata bool) []byte {
	if messageID != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, messageID)
	}
	if status != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, status)
	}
	if hasMetadata {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, metadata)
	}
	return b
}
