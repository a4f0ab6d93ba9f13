package storage

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// The write path stores the element or data point bytes as received and
// needs only a handful of scalars from each message. Decoding the whole
// message with proto.Unmarshal costs more than the synced commit (it
// allocates every tag value), so writes are parsed at the wire level here
// and the nested tag and field values are only validated against their
// schema, with the rules proto.Unmarshal applies: lengths in bounds, valid
// varints, UTF-8 strings, and a known field with an unexpected wire type
// kept as an unknown field. Anything unusual (a message field repeated,
// which protobuf merges) falls back to proto.Unmarshal.

type fieldKind uint8

const (
	fUnknown fieldKind = iota
	fString
	fBytes
	fVarint
	fFixed64
	fPackedVarint // repeated int64: packed or not
	fMessage
)

type field struct {
	kind fieldKind
	msg  msgSchema
}

// msgSchema lists a message's fields by number.
type msgSchema []field

func (s msgSchema) field(n protowire.Number) field {
	if n >= 0 && int(n) < len(s) {
		return s[n]
	}
	return field{}
}

var (
	timestampSchema = msgSchema{1: {kind: fVarint}, 2: {kind: fVarint}}
	strSchema       = msgSchema{1: {kind: fString}}
	intSchema       = msgSchema{1: {kind: fVarint}}
	intArraySchema  = msgSchema{1: {kind: fPackedVarint}}
	floatSchema     = msgSchema{1: {kind: fFixed64}}
	// model.v1.TagValue: a oneof of null, str, str_array, int, int_array,
	// binary_data and timestamp.
	tagValueSchema = msgSchema{
		1: {kind: fVarint}, 2: {kind: fMessage, msg: strSchema}, 3: {kind: fMessage, msg: strSchema},
		4: {kind: fMessage, msg: intSchema}, 5: {kind: fMessage, msg: intArraySchema},
		6: {kind: fBytes}, 7: {kind: fMessage, msg: timestampSchema},
	}
	tagFamilySchema = msgSchema{1: {kind: fMessage, msg: tagValueSchema}}
	// model.v1.FieldValue: a oneof of null, str, int, binary_data and float.
	fieldValueSchema = msgSchema{
		1: {kind: fVarint}, 2: {kind: fMessage, msg: strSchema}, 3: {kind: fMessage, msg: intSchema},
		4: {kind: fBytes}, 5: {kind: fMessage, msg: floatSchema},
	}
)

// maxDepth bounds recursion on hostile input; our messages nest 4 deep.
const maxDepth = 16

var errWire = errors.New("malformed protobuf")

// walk calls fn for each field of b. For length-delimited fields v is the
// payload; for varint and fixed fields x is the value.
func walk(b []byte, fn func(n protowire.Number, t protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return fmt.Errorf("%w: %w", errWire, protowire.ParseError(l))
		}
		if n > protowire.MaxValidNumber {
			return fmt.Errorf("%w: field number %d out of range", errWire, n)
		}
		b = b[l:]
		var (
			v []byte
			x uint64
		)
		switch t {
		case protowire.VarintType:
			x, l = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, l = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var x32 uint32
			x32, l = protowire.ConsumeFixed32(b)
			x = uint64(x32)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		default:
			l = protowire.ConsumeFieldValue(n, t, b)
		}
		if l < 0 {
			return fmt.Errorf("%w: field %d: %w", errWire, n, protowire.ParseError(l))
		}
		b = b[l:]
		if err := fn(n, t, v, x); err != nil {
			return err
		}
	}
	return nil
}

// validate checks b against s the way proto.Unmarshal would decode it.
func validate(b []byte, s msgSchema, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nested too deep", errWire)
	}
	return walk(b, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) error {
		f := s.field(n)
		switch {
		case f.kind == fString && t == protowire.BytesType:
			if !utf8.Valid(v) {
				return fmt.Errorf("%w: field %d: invalid UTF-8", errWire, n)
			}
		case f.kind == fMessage && t == protowire.BytesType:
			return validate(v, f.msg, depth+1)
		case f.kind == fPackedVarint && t == protowire.BytesType:
			for len(v) > 0 {
				_, l := protowire.ConsumeVarint(v)
				if l < 0 {
					return fmt.Errorf("%w: field %d: %w", errWire, n, protowire.ParseError(l))
				}
				v = v[l:]
			}
		}
		return nil
	})
}

// wireWrite is what the write path reads from a StreamWrite or MeasureWrite.
type wireWrite struct {
	group, name string
	seriesKey   []byte
	value       []byte // the ElementValue or DataPointValue bytes
	elementID   string
	hasTS       bool
	seconds     int64
	nanos       int32
	version     int64
}

// parseWrite parses a StreamWrite (stream true) or MeasureWrite. ok is
// false when the message needs proto.Unmarshal's merge semantics.
func parseWrite(m []byte, stream bool, names *nameCache) (w wireWrite, ok bool, err error) {
	values := 0
	err = walk(m, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) error {
		if t != protowire.BytesType {
			return nil // shard_id, schema_mod_revision, or unknown
		}
		switch n {
		case 1, 2:
			if !utf8.Valid(v) {
				return fmt.Errorf("%w: field %d: invalid UTF-8", errWire, n)
			}
			if n == 1 {
				w.group = names.groupOf(v)
			} else {
				w.name = names.nameOf(v)
			}
		case 4:
			w.seriesKey = v
		case 5:
			w.value = v
			values++
		}
		return nil
	})
	if err != nil || values > 1 {
		return w, false, err
	}
	if values == 0 {
		return w, true, nil
	}
	if stream {
		err = parseElement(w.value, &w)
	} else {
		err = parseDataPoint(w.value, &w)
	}
	return w, true, err
}

// nameCache keeps the last group and name a batch's writes had: a batch
// is mostly one stream or measure, so they are converted to strings once
// instead of once a message. A nil cache converts every time.
type nameCache struct{ group, name string }

func (c *nameCache) groupOf(v []byte) string {
	if c == nil {
		return string(v)
	}
	return reuse(&c.group, v)
}

func (c *nameCache) nameOf(v []byte) string {
	if c == nil {
		return string(v)
	}
	return reuse(&c.name, v)
}

// reuse returns *last if it equals v (compared without converting), else
// v converted, remembered in *last.
func reuse(last *string, v []byte) string {
	if string(v) != *last {
		*last = string(v)
	}
	return *last
}

func parseElement(b []byte, w *wireWrite) error {
	return walk(b, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) error {
		if t != protowire.BytesType {
			return nil
		}
		switch n {
		case 1:
			if !utf8.Valid(v) {
				return fmt.Errorf("%w: element_id: invalid UTF-8", errWire)
			}
			w.elementID = string(v)
		case 2:
			return parseTimestamp(v, w)
		case 3:
			return validate(v, tagFamilySchema, 1)
		}
		return nil
	})
}

func parseDataPoint(b []byte, w *wireWrite) error {
	return walk(b, func(n protowire.Number, t protowire.Type, v []byte, x uint64) error {
		switch {
		case n == 1 && t == protowire.BytesType:
			return parseTimestamp(v, w)
		case n == 2 && t == protowire.BytesType:
			return validate(v, tagFamilySchema, 1)
		case n == 3 && t == protowire.BytesType:
			return validate(v, fieldValueSchema, 1)
		case n == 4 && t == protowire.VarintType:
			w.version = int64(x)
		}
		return nil
	})
}

// parseTimestamp merges one occurrence of a Timestamp field into w, as
// protobuf merges repeated occurrences of a message field.
func parseTimestamp(b []byte, w *wireWrite) error {
	w.hasTS = true
	return walk(b, func(n protowire.Number, t protowire.Type, _ []byte, x uint64) error {
		if t != protowire.VarintType {
			return nil
		}
		switch n {
		case 1:
			w.seconds = int64(x)
		case 2:
			w.nanos = int32(x)
		}
		return nil
	})
}
