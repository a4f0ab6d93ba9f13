package route

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"
)

// ValueKind says which field of an EntityValue holds the value.
//
// The numbers are the field numbers of the BanyanDB model.v1.TagValue oneof,
// so a converter can map one to the other without a table. They are also the
// kind byte written into every series key, which feeds the shard hash: changing
// one re-shards every series, so they never change.
type ValueKind uint8

// Kinds of entity values. KindInvalid is the zero value on purpose: an
// EntityValue whose Kind was never set is a converter bug, and silently
// encoding it as null would merge distinct series into one.
const (
	KindInvalid   ValueKind = 0
	KindNull      ValueKind = 1
	KindStr       ValueKind = 2
	KindStrArray  ValueKind = 3
	KindInt       ValueKind = 4
	KindIntArray  ValueKind = 5
	KindBytes     ValueKind = 6
	KindTimestamp ValueKind = 7
)

func (k ValueKind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindStr:
		return "str"
	case KindStrArray:
		return "str_array"
	case KindInt:
		return "int"
	case KindIntArray:
		return "int_array"
	case KindBytes:
		return "binary"
	case KindTimestamp:
		return "timestamp"
	default:
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
}

// EntityValue is one entity tag value. Only the field named by Kind is read;
// the others are ignored, so a caller on the hot path may reuse one value.
type EntityValue struct {
	Kind  ValueKind
	Str   string   // KindStr
	Int   int64    // KindInt; KindTimestamp as Unix nanoseconds
	Strs  []string // KindStrArray
	Ints  []int64  // KindIntArray
	Bytes []byte   // KindBytes
}

// NullValue returns the null entity value.
func NullValue() EntityValue { return EntityValue{Kind: KindNull} }

// StrValue returns a string entity value.
func StrValue(s string) EntityValue { return EntityValue{Kind: KindStr, Str: s} }

// IntValue returns an int64 entity value.
func IntValue(i int64) EntityValue { return EntityValue{Kind: KindInt, Int: i} }

// StrArrayValue returns a string-array entity value; it keeps s, not a copy.
func StrArrayValue(s ...string) EntityValue { return EntityValue{Kind: KindStrArray, Strs: s} }

// IntArrayValue returns an int64-array entity value; it keeps i, not a copy.
func IntArrayValue(i ...int64) EntityValue { return EntityValue{Kind: KindIntArray, Ints: i} }

// BytesValue returns a binary entity value; it keeps b, not a copy.
func BytesValue(b []byte) EntityValue { return EntityValue{Kind: KindBytes, Bytes: b} }

// TimestampValue returns a timestamp entity value held as Unix nanoseconds,
// the resolution BanyanDB stores (so years 1678..2262 are representable).
func TimestampValue(t time.Time) EntityValue {
	return EntityValue{Kind: KindTimestamp, Int: t.UnixNano()}
}

// Series key layout (all lengths and counts are minimal uvarints):
//
//	key       = uvarint(len(name)) name value*
//	value     = kind:1 payload
//	null      = (no payload)
//	str       = uvarint(len) bytes
//	binary    = uvarint(len) bytes
//	int       = 8 bytes big-endian of uint64(v) ^ 1<<63
//	timestamp = same as int (Unix nanoseconds)
//	str_array = uvarint(count) (uvarint(len) bytes)*
//	int_array = uvarint(count) (8 bytes as int)*
//
// Every field is self-delimiting, so the key is a prefix-free concatenation
// and no two distinct (name, values) inputs share a key: ("ab","c") differs
// from ("a","bc") by the length prefixes and str "1" from int 1 by the kind
// byte. Ints flip the sign bit so byte order equals numeric order, which keeps
// keys usable as sorted storage prefixes. No value count is written: a key for
// (name, v1) is a prefix of the key for (name, v1, v2), which is harmless for
// hashing and useful for prefix scans.

// AppendSeriesKey appends the series key of a stream or measure name and its
// entity values to dst and returns the extended slice. With a dst of enough
// capacity it does not allocate. On error it returns dst unchanged.
func AppendSeriesKey(dst []byte, name string, values []EntityValue) ([]byte, error) {
	start := len(dst)
	dst = AppendSeriesName(dst, name)
	for i := range values {
		var err error
		if dst, err = AppendEntityValue(dst, values[i]); err != nil {
			return dst[:start], fmt.Errorf("entity value %d: %w", i, err)
		}
	}
	return dst, nil
}

// AppendSeriesName starts a series key: callers that convert tag values one at
// a time call it once and then AppendEntityValue per value, which produces the
// same bytes as AppendSeriesKey without building a []EntityValue.
func AppendSeriesName(dst []byte, name string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	return append(dst, name...)
}

// AppendEntityValue appends one encoded entity value to dst. It returns
// ErrInvalidKind, and dst unchanged, for an unknown Kind.
func AppendEntityValue(dst []byte, v EntityValue) ([]byte, error) {
	switch v.Kind {
	case KindNull:
		return append(dst, byte(KindNull)), nil
	case KindStr:
		dst = append(dst, byte(KindStr))
		dst = binary.AppendUvarint(dst, uint64(len(v.Str)))
		return append(dst, v.Str...), nil
	case KindBytes:
		dst = append(dst, byte(KindBytes))
		dst = binary.AppendUvarint(dst, uint64(len(v.Bytes)))
		return append(dst, v.Bytes...), nil
	case KindInt, KindTimestamp:
		dst = append(dst, byte(v.Kind))
		return appendInt(dst, v.Int), nil
	case KindStrArray:
		dst = append(dst, byte(KindStrArray))
		dst = binary.AppendUvarint(dst, uint64(len(v.Strs)))
		for _, s := range v.Strs {
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
		return dst, nil
	case KindIntArray:
		dst = append(dst, byte(KindIntArray))
		dst = binary.AppendUvarint(dst, uint64(len(v.Ints)))
		for _, i := range v.Ints {
			dst = appendInt(dst, i)
		}
		return dst, nil
	default:
		return dst, fmt.Errorf("%w: %v", ErrInvalidKind, v.Kind)
	}
}

func appendInt(dst []byte, i int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(i)^(1<<63))
}

// DecodeSeriesKey is the inverse of AppendSeriesKey, for debugging and tests.
// It accepts only bytes the encoder produces (minimal varints, known kinds, no
// trailing bytes), so encode(decode(k)) == k for every key it accepts. Empty
// strings, arrays and binaries decode with nil slices; nothing aliases key.
func DecodeSeriesKey(key []byte) (name string, values []EntityValue, err error) {
	d := decoder{buf: key}
	nameBytes, err := d.lenPrefixed()
	if err != nil {
		return "", nil, fmt.Errorf("name: %w", err)
	}
	name = string(nameBytes)
	for len(d.buf) > 0 {
		at := len(key) - len(d.buf)
		v, err := d.value()
		if err != nil {
			return "", nil, fmt.Errorf("value %d at byte %d: %w", len(values), at, err)
		}
		values = append(values, v)
	}
	return name, values, nil
}

type decoder struct{ buf []byte }

func (d *decoder) value() (EntityValue, error) {
	kind := ValueKind(d.buf[0])
	d.buf = d.buf[1:]
	v := EntityValue{Kind: kind}
	switch kind {
	case KindNull:
	case KindStr:
		b, err := d.lenPrefixed()
		if err != nil {
			return v, err
		}
		v.Str = string(b)
	case KindBytes:
		b, err := d.lenPrefixed()
		if err != nil {
			return v, err
		}
		if len(b) > 0 {
			v.Bytes = append([]byte(nil), b...)
		}
	case KindInt, KindTimestamp:
		i, err := d.int()
		if err != nil {
			return v, err
		}
		v.Int = i
	case KindStrArray:
		// Each element takes at least one byte, so a count above the bytes
		// left is malformed; checking first bounds the allocation.
		n, err := d.count(1)
		if err != nil {
			return v, err
		}
		for range n {
			b, err := d.lenPrefixed()
			if err != nil {
				return v, err
			}
			v.Strs = append(v.Strs, string(b))
		}
	case KindIntArray:
		n, err := d.count(8)
		if err != nil {
			return v, err
		}
		for range n {
			i, _ := d.int() // count() proved the bytes are there
			v.Ints = append(v.Ints, i)
		}
	default:
		return v, fmt.Errorf("%w: unknown kind byte %d", ErrMalformedKey, uint8(kind))
	}
	return v, nil
}

// uvarint reads a minimal uvarint; a padded one (e.g. 0x80 0x00 for 0) would
// give a second encoding of the same input and break encode(decode(k)) == k.
func (d *decoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(d.buf)
	if n <= 0 {
		return 0, fmt.Errorf("%w: truncated or overflowing varint", ErrMalformedKey)
	}
	if n != uvarintLen(x) {
		return 0, fmt.Errorf("%w: non-minimal varint", ErrMalformedKey)
	}
	d.buf = d.buf[n:]
	return x, nil
}

func (d *decoder) lenPrefixed() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.buf)) {
		return nil, fmt.Errorf("%w: length %d exceeds remaining %d bytes", ErrMalformedKey, n, len(d.buf))
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	return b, nil
}

func (d *decoder) count(minElemSize uint64) (uint64, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.buf))/minElemSize {
		return 0, fmt.Errorf("%w: count %d exceeds remaining %d bytes", ErrMalformedKey, n, len(d.buf))
	}
	return n, nil
}

func (d *decoder) int() (int64, error) {
	if len(d.buf) < 8 {
		return 0, fmt.Errorf("%w: truncated int", ErrMalformedKey)
	}
	u := binary.BigEndian.Uint64(d.buf)
	d.buf = d.buf[8:]
	return int64(u ^ (1 << 63)), nil
}

func uvarintLen(x uint64) int {
	return max(1, (bits.Len64(x)+6)/7)
}
