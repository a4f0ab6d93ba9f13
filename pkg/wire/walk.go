package wire

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrMalformed is what a parser returns for bytes that proto.Unmarshal
// would refuse.
var ErrMalformed = errors.New("malformed protobuf")

// field is one field of a message: v is a length-delimited field's
// payload (non-nil, possibly empty), x a varint or fixed field's value.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   []byte
	x   uint64
}

// next reads the field at the start of b and returns it with its length.
// The loops over a write's many small values call it as
//
//	f, n := shortField(b)
//	if n == 0 {
//		f, n, err = next(b)
//	}
//
// so that their common case, inlined, costs no call.
func next(b []byte) (f field, n int, err error) {
	num, typ, l := protowire.ConsumeTag(b)
	if l < 0 {
		return f, 0, fmt.Errorf("%w: %w", ErrMalformed, protowire.ParseError(l))
	}
	if !num.IsValid() { // ConsumeTag lets numbers above the maximum through
		return f, 0, fmt.Errorf("%w: field number %d out of range", ErrMalformed, num)
	}
	f.num, f.typ = num, typ
	rest := b[l:]
	var m int
	switch typ {
	case protowire.VarintType:
		f.x, m = protowire.ConsumeVarint(rest)
	case protowire.Fixed64Type:
		f.x, m = protowire.ConsumeFixed64(rest)
	case protowire.Fixed32Type:
		var x32 uint32
		x32, m = protowire.ConsumeFixed32(rest)
		f.x = uint64(x32)
	case protowire.BytesType:
		f.v, m = protowire.ConsumeBytes(rest)
		if f.v == nil && m >= 0 {
			f.v = rest[:0]
		}
	default: // groups: valid wire format, unknown to every message here
		m = protowire.ConsumeFieldValue(num, typ, rest)
	}
	if m < 0 {
		return f, 0, fmt.Errorf("%w: field %d: %w", ErrMalformed, num, protowire.ParseError(m))
	}
	return f, l + m, nil
}

// shortField reads the field at the start of b when it is length-delimited
// with a one-byte tag (field 1..15) and a one-byte length, as most fields
// of a write are; otherwise n is 0 and next reads it. It has no calls, so
// it is inlined.
func shortField(b []byte) (f field, n int) {
	if len(b) < 2 || b[0]&0x87 != byte(protowire.BytesType) || b[0] < 1<<3 || b[1] >= 0x80 || 2+int(b[1]) > len(b) {
		return field{}, 0
	}
	return field{num: protowire.Number(b[0] >> 3), typ: protowire.BytesType, v: b[2 : 2+b[1]]}, 2 + int(b[1])
}

// bytesField is f's payload when f is field num of the length-delimited
// wire type; ok is false otherwise.
func (f field) bytesField(num protowire.Number) ([]byte, bool) {
	return f.v, f.num == num && f.typ == protowire.BytesType
}

func checkUTF8(v []byte, what string) error {
	if !utf8.Valid(v) {
		return fmt.Errorf("%w: %s: invalid UTF-8", ErrMalformed, what)
	}
	return nil
}

// shape lists the fields of a message the write path validates without
// reading: what each known field number holds.
type shape []fieldShape

type fieldShape uint8

const (
	sUnknown      fieldShape = iota // not a field of the message, or not one that needs a check
	sString                         // string (singular or repeated): UTF-8
	sPackedVarint                   // repeated int64: packed or not
)

// nested is a message-typed field's shape, when it has one.
type nested struct {
	num   protowire.Number
	shape shape
}

// validate checks b the way proto.Unmarshal decodes a message of shape s
// whose message-typed fields are sub (one level deep is all the write
// path's opaque messages need).
func validate(b []byte, s shape, sub ...nested) error {
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return err
		}
		b = b[n:]
		if f.typ != protowire.BytesType {
			continue
		}
		for _, m := range sub {
			if m.num == f.num {
				if err := validate(f.v, m.shape); err != nil {
					return err
				}
			}
		}
		if int(f.num) >= len(s) {
			continue
		}
		switch s[f.num] {
		case sString:
			if !utf8.Valid(f.v) {
				return fmt.Errorf("%w: field %d: invalid UTF-8", ErrMalformed, f.num)
			}
		case sPackedVarint:
			if err := packedVarints(f.v, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// packedVarints checks a packed repeated varint payload, calling fn (if
// not nil) for each value.
func packedVarints(v []byte, fn func(uint64)) error {
	for len(v) > 0 {
		x, l := protowire.ConsumeVarint(v)
		if l < 0 {
			return fmt.Errorf("%w: packed varint: %w", ErrMalformed, protowire.ParseError(l))
		}
		if fn != nil {
			fn(x)
		}
		v = v[l:]
	}
	return nil
}

// Shapes of the opaque messages inside writes.
var (
	// common.v1.Metadata: group 1 and name 2 are strings, the rest varints.
	metadataShape = shape{1: sString, 2: sString}
	// stream.v1.TagFamilySpec and measure.v1.TagFamilySpec: name 1, tag_names 2.
	tagFamilySpecShape = shape{1: sString, 2: sString}
	// measure.v1.DataPointSpec: tag_family_spec 1 (messages), field_names 2.
	dataPointSpecShape = shape{2: sString}
	// trace.v1.TagSpec: tag_names (1).
	traceTagSpecShape = shape{1: sString}
)
