package wire

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Kind is which member of a model.v1.TagValue or FieldValue oneof a value
// holds. Tag kinds are the TagValue field numbers, as route.ValueKind's are.
type Kind uint8

// Kinds of values. KindNone is a value with no member set, which the write
// path treats as a null.
const (
	KindNone      Kind = 0
	KindNull      Kind = 1
	KindStr       Kind = 2
	KindStrArray  Kind = 3
	KindInt       Kind = 4
	KindIntArray  Kind = 5
	KindBinary    Kind = 6
	KindTimestamp Kind = 7
	KindFloat     Kind = 8 // fields only
)

func (k Kind) String() string {
	switch k {
	case KindNone, KindNull:
		return "null"
	case KindStr:
		return "str"
	case KindStrArray:
		return "str_array"
	case KindInt:
		return "int"
	case KindIntArray:
		return "int_array"
	case KindBinary:
		return "binary_data"
	case KindTimestamp:
		return "timestamp"
	case KindFloat:
		return "float"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// IsNull reports whether the value is a null, set or implied.
func (k Kind) IsNull() bool { return k <= KindNull }

// Value is one TagValue or FieldValue.
type Value struct {
	// Raw is the whole message as received: the write path re-encodes a
	// value in another position by copying it.
	Raw  []byte
	Kind Kind
	// Bytes is the value of a str or binary_data; for str_array, int_array
	// and timestamp, the member's message (see StrArray, IntArray, Time).
	Bytes []byte
	// Int is the value of an int, or a float's IEEE 754 bits.
	Int int64
}

// tagMembers and fieldMembers map oneof field numbers to kinds.
var (
	tagMembers   = [...]Kind{1: KindNull, 2: KindStr, 3: KindStrArray, 4: KindInt, 5: KindIntArray, 6: KindBinary, 7: KindTimestamp}
	fieldMembers = [...]Kind{1: KindNull, 2: KindStr, 3: KindInt, 4: KindBinary, 5: KindFloat}
)

// parseValue reads a TagValue (members tagMembers) or a FieldValue
// (fieldMembers) into v. merged reports a oneof set more than once.
func parseValue(b []byte, members []Kind, v *Value) (merged bool, err error) {
	*v = Value{Raw: b}
	set := false
	for len(b) > 0 {
		f, n := shortField(b)
		if n == 0 {
			if f, n, err = next(b); err != nil {
				return false, err
			}
		}
		b = b[n:]
		if int(f.num) >= len(members) || members[f.num] == KindNone {
			continue
		}
		k := members[f.num]
		if wantType(k) != f.typ {
			continue // protobuf keeps it as an unknown field
		}
		if set {
			merged = true
		}
		set = true
		v.Kind, v.Bytes, v.Int = k, nil, 0
		switch k {
		case KindNull:
		case KindBinary:
			v.Bytes = f.v
		case KindStr:
			v.Bytes, err = scalarString(f.v)
		case KindInt:
			v.Int, err = scalarInt(f.v, protowire.VarintType)
		case KindFloat:
			v.Int, err = scalarInt(f.v, protowire.Fixed64Type)
		case KindStrArray:
			v.Bytes, err = f.v, eachString(f.v, nil)
		case KindIntArray:
			v.Bytes, err = f.v, eachInt(f.v, nil)
		case KindTimestamp:
			v.Bytes = f.v
			_, _, err = parseTime(f.v)
		}
		if err != nil {
			return false, err
		}
	}
	return merged, nil
}

func wantType(k Kind) protowire.Type {
	switch k {
	case KindNull:
		return protowire.VarintType
	default:
		return protowire.BytesType
	}
}

// scalarString reads a model.v1.Str: value (1), the last occurrence winning.
func scalarString(b []byte) ([]byte, error) {
	s := b[:0]
	for len(b) > 0 {
		f, n := shortField(b)
		if n == 0 {
			var err error
			if f, n, err = next(b); err != nil {
				return nil, err
			}
		}
		b = b[n:]
		if v, ok := f.bytesField(1); ok {
			if err := checkUTF8(v, "str"); err != nil {
				return nil, err
			}
			s = v
		}
	}
	return s, nil
}

// scalarInt reads a model.v1.Int (varint) or Float (fixed64): value (1),
// the last occurrence winning.
func scalarInt(b []byte, typ protowire.Type) (int64, error) {
	var x uint64
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return 0, err
		}
		b = b[n:]
		if f.num == 1 && f.typ == typ {
			x = f.x
		}
	}
	return int64(x), nil
}

// eachString checks a model.v1.StrArray and calls fn, if not nil, for
// each of its values.
func eachString(b []byte, fn func([]byte)) error {
	for len(b) > 0 {
		f, n := shortField(b)
		if n == 0 {
			var err error
			if f, n, err = next(b); err != nil {
				return err
			}
		}
		b = b[n:]
		if v, ok := f.bytesField(1); ok {
			if err := checkUTF8(v, "str_array"); err != nil {
				return err
			}
			if fn != nil {
				fn(v)
			}
		}
	}
	return nil
}

// eachInt checks a model.v1.IntArray, packed or not, and calls fn, if not
// nil, for each of its values.
func eachInt(b []byte, fn func(int64)) error {
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case f.num != 1:
		case f.typ == protowire.VarintType:
			if fn != nil {
				fn(int64(f.x))
			}
		case f.typ == protowire.BytesType:
			if err := packedVarints(f.v, func(x uint64) {
				if fn != nil {
					fn(int64(x))
				}
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseTime reads a google.protobuf.Timestamp: seconds (1), nanos (2).
func parseTime(b []byte) (seconds int64, nanos int32, err error) {
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return 0, 0, err
		}
		b = b[n:]
		if f.typ != protowire.VarintType {
			continue
		}
		switch f.num {
		case 1:
			seconds = int64(f.x)
		case 2:
			nanos = int32(f.x)
		}
	}
	return seconds, nanos, nil
}

// StrArray calls fn for each value of a str_array.
func (v *Value) StrArray(fn func([]byte)) { _ = eachString(v.Bytes, fn) }

// IntArray calls fn for each value of an int_array.
func (v *Value) IntArray(fn func(int64)) { _ = eachInt(v.Bytes, fn) }

// Time is a timestamp's seconds and nanos.
func (v *Value) Time() (seconds int64, nanos int32) {
	s, n, _ := parseTime(v.Bytes)
	return s, n
}
