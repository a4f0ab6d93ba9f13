package tsdb

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Kind says what a key holds. The byte is the first byte of every data key,
// so streams and measures live in disjoint key ranges.
type Kind byte

// Kinds of data. The values are on disk: they never change.
const (
	// kindSegmentMeta prefixes segment records: [0x01][kind][group][start] → end.
	kindSegmentMeta Kind = 0x01
	// KindStream prefixes stream element keys.
	KindStream Kind = 0x02
	// KindMeasure prefixes measure data point keys.
	KindMeasure Kind = 0x03
	// KindProperty prefixes property keys: one record a property (group,
	// name, id) at timestamp 0, its element id the property's id, versioned
	// by its revision like a measure data point (docs/design/properties.md).
	KindProperty Kind = 0x04
	// KindTrace prefixes span keys: the series is the trace (its name and
	// trace id), the element id the span id; versioned by the write's
	// version like a measure data point (docs/design/traces.md).
	KindTrace Kind = 0x05
	// KindTraceTime prefixes the spans' time index: one record a span in
	// one series per trace name, so a time range of a name's spans is one
	// contiguous key range; its element id is the span's trace series key
	// (length-prefixed) and span id, its value the span without its bytes.
	KindTraceTime Kind = 0x06
)

// versioned kinds keep, of several writes of one key, the one with the
// highest version (the newest among equals), in the buffer, in Pebble's
// merge and in scans: every data kind. A stream element's version is the
// liaison's clock reading (0 for one stored without), so a copy handed off
// or re-placed late never hides a later write of the element.
func (k Kind) versioned() bool {
	return k == KindStream || k == KindMeasure || k == KindProperty || k == KindTrace || k == KindTraceTime
}

// valueVersion reads the version of a stored value of kind k without
// parsing the rest.
func valueVersion(k Kind, v []byte) (int64, error) {
	if k == KindStream {
		version, _, _, err := parseStreamValue(v)
		return version, err
	}
	return measureVersion(v)
}

func (k Kind) String() string {
	switch k {
	case KindStream:
		return "stream"
	case KindMeasure:
		return "measure"
	case KindProperty:
		return "property"
	case KindTrace:
		return "trace"
	case KindTraceTime:
		return "trace-time"
	default:
		return fmt.Sprintf("kind(%d)", byte(k))
	}
}

// valueFormat is the first byte of every stored value, so the layout can
// change later without guessing.
const valueFormat byte = 1

var errMalformed = errors.New("tsdb: malformed stored record")

// Key layout (see docs/design/storage.md):
//
//	stream  = 0x02 lp(group) be64s(segment start) lp(name) be64(xxhash64(series key)) be64s(ts) element id
//	measure = 0x03 lp(group) be64s(segment start) lp(name) be64(xxhash64(series key)) be64s(ts)
//	trace   = 0x05 lp(group) be64s(segment start) lp(name) be64(xxhash64(series key)) be64s(ts) span id
//	trace-time = 0x06 lp(group) be64s(segment start) lp(name) be64(xxhash64(time series)) be64s(ts) lp(series key) span id
//	segment = 0x01 kind lp(group) be64s(segment start)            → be64s(segment end)
//
// lp is uvarint(len) followed by the bytes, be64s an int64 big-endian with the
// sign bit flipped so byte order is numeric order. Every component before the
// element id is self-delimiting, so the element id needs no length.

func appendInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

func readInt64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func appendLP(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// segmentPrefix is the key prefix of all data of one segment.
func segmentPrefix(dst []byte, kind Kind, group string, start int64) []byte {
	dst = append(dst, byte(kind))
	dst = appendLP(dst, group)
	return appendInt64(dst, start)
}

// namePrefix is the key prefix of one stream's or measure's data in a segment.
func namePrefix(dst []byte, kind Kind, group string, start int64, name string) []byte {
	return appendLP(segmentPrefix(dst, kind, group, start), name)
}

func segmentMetaKey(dst []byte, kind Kind, group string, start int64) []byte {
	dst = append(dst, byte(kindSegmentMeta), byte(kind))
	dst = appendLP(dst, group)
	return appendInt64(dst, start)
}

// parseSegmentMetaKey returns the kind, group and start of a segment record.
func parseSegmentMetaKey(k []byte) (Kind, string, int64, error) {
	if len(k) < 2 || Kind(k[0]) != kindSegmentMeta {
		return 0, "", 0, errMalformed
	}
	kind := Kind(k[1])
	n, w := binary.Uvarint(k[2:])
	if w <= 0 || uint64(len(k)-2-w) != n+8 {
		return 0, "", 0, errMalformed
	}
	group := string(k[2+w : 2+w+int(n)])
	return kind, group, readInt64(k[2+w+int(n):]), nil
}

// SeriesHash is the 8-byte series component of a data key.
func SeriesHash(seriesKey []byte) uint64 { return xxhash.Sum64(seriesKey) }

// dataKey appends the key of one element (elementID may be empty for
// measures) under a name prefix.
func dataKey(prefix []byte, seriesHash uint64, ts int64, elementID string) []byte {
	k := binary.BigEndian.AppendUint64(prefix, seriesHash)
	k = appendInt64(k, ts)
	return append(k, elementID...)
}

// keyTail parses what follows a name prefix: series hash, timestamp and
// element id (aliasing k).
func keyTail(tail []byte) (hash uint64, ts int64, elementID []byte, err error) {
	if len(tail) < 16 {
		return 0, 0, nil, errMalformed
	}
	return binary.BigEndian.Uint64(tail), readInt64(tail[8:]), tail[16:], nil
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil if there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Values:
//
//	stream  = format:1 lp(series key) marshalled ElementValue
//	        | format:2 be64s(version) lp(series key) marshalled ElementValue
//	measure = format:1 be64s(version) lp(series key) marshalled DataPointValue
//	trace   = format:1 be64s(version) lp(series key) marshalled cluster.v1.SpanValue
//
// A stream element written with a version (the liaison's, which orders
// copies on different nodes) is stored in format 2; one without, and every
// element stored before versions existed, in format 1 (version 0).

// streamVersionedFormat is the format of a stream element with a version.
const streamVersionedFormat byte = 2

func appendStreamValue(dst []byte, version int64, seriesKey, payload []byte) []byte {
	if version == 0 {
		dst = append(dst, valueFormat)
	} else {
		dst = append(dst, streamVersionedFormat)
		dst = appendInt64(dst, version)
	}
	dst = binary.AppendUvarint(dst, uint64(len(seriesKey)))
	dst = append(dst, seriesKey...)
	return append(dst, payload...)
}

func appendMeasureValue(dst []byte, version int64, seriesKey, payload []byte) []byte {
	dst = append(dst, valueFormat)
	dst = appendInt64(dst, version)
	dst = binary.AppendUvarint(dst, uint64(len(seriesKey)))
	dst = append(dst, seriesKey...)
	return append(dst, payload...)
}

// parseStreamValue returns the version (0 when it has none), series key
// and payload of a stored element.
func parseStreamValue(v []byte) (version int64, seriesKey, payload []byte, err error) {
	switch {
	case len(v) >= 1 && v[0] == valueFormat:
		seriesKey, payload, err = splitLP(v[1:])
		return 0, seriesKey, payload, err
	case len(v) >= 9 && v[0] == streamVersionedFormat:
		seriesKey, payload, err = splitLP(v[9:])
		return readInt64(v[1:9]), seriesKey, payload, err
	}
	return 0, nil, nil, errMalformed
}

// measureVersion reads the version of a stored data point without parsing
// the rest; the merge operator calls it on every operand.
func measureVersion(v []byte) (int64, error) {
	if len(v) < 9 || v[0] != valueFormat {
		return 0, errMalformed
	}
	return readInt64(v[1:9]), nil
}

func parseMeasureValue(v []byte) (version int64, seriesKey, payload []byte, err error) {
	version, err = measureVersion(v)
	if err != nil {
		return 0, nil, nil, err
	}
	seriesKey, payload, err = splitLP(v[9:])
	return version, seriesKey, payload, err
}

func splitLP(b []byte) (head, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, errMalformed
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}
