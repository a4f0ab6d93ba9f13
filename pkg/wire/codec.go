package wire

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Marshaler is a message that encodes itself (a frame already encoded, a
// batch written by hand into a pooled buffer).
type Marshaler interface {
	MarshalWire() (mem.BufferSlice, error)
}

// Unmarshaler is a message that decodes itself from the received buffers.
// data is freed by grpc when UnmarshalWire returns: an Unmarshaler that
// keeps it takes a reference (data.Ref) and frees it later.
type Unmarshaler interface {
	UnmarshalWire(data mem.BufferSlice) error
}

// Codec returns the gRPC codec of the write path: grpc's proto codec,
// except that a Marshaler or Unmarshaler encodes or decodes itself. It has
// grpc's proto codec's name, so it replaces it where installed (on a
// server with grpc.ForceServerCodecV2, on a connection with
// grpc.ForceCodecV2) and everything else is unchanged.
func Codec() encoding.CodecV2 { return codec{std: encoding.GetCodecV2(proto.Name)} }

type codec struct{ std encoding.CodecV2 }

func (c codec) Name() string { return proto.Name }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(Marshaler); ok {
		return m.MarshalWire()
	}
	return c.std.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if u, ok := v.(Unmarshaler); ok {
		return u.UnmarshalWire(data)
	}
	return c.std.Unmarshal(data, v)
}

// Frame is one message as its wire bytes: sent as they are, or received
// without a parse. A received frame aliases grpc's pooled buffer when the
// message arrived in one (a write request almost always does); Release
// gives it back.
type Frame struct {
	Raw  []byte
	held mem.BufferSlice
}

// MarshalWire implements Marshaler. grpc writes the bytes after SendMsg
// returns: Raw must not be reused until then.
func (f *Frame) MarshalWire() (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(f.Raw)}, nil
}

// UnmarshalWire implements Unmarshaler.
func (f *Frame) UnmarshalWire(data mem.BufferSlice) error {
	f.Release()
	if len(data) == 1 && data.Len() > 0 {
		data.Ref() // grpc frees data when Unmarshal returns
		f.Raw, f.held = data[0].ReadOnlyData(), data
		return nil
	}
	f.Raw = data.Materialize()
	if f.Raw == nil {
		f.Raw = []byte{} // an empty message: present, no fields
	}
	return nil
}

// Release gives the received buffer back; Raw, and slices of it, may not
// be used afterwards.
func (f *Frame) Release() {
	if f.held != nil {
		f.held.Free()
	}
	f.Raw, f.held = nil, nil
}
