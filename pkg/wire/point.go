package wire

import (
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Point is a stream.v1.ElementValue or a measure.v1.DataPointValue read at
// the wire level. Its slices alias the parsed bytes and are reused by the
// next parse into the same Point.
type Point struct {
	ElementID []byte // stream only
	// Timestamp is the Timestamp message as received; nil when absent.
	Timestamp []byte
	Seconds   int64
	Nanos     int32
	// Tags holds every family's tag values in order: family i is
	// Tags[FamEnd[i-1]:FamEnd[i]].
	Tags   []Value
	FamEnd []int
	Fields []Value // measure only
	// Version is the data point's version (measure), or the span's (trace).
	Version int64
	// Span is a span's bytes (trace only).
	Span []byte
	// Merged: a singular field occurs more than once (see the package doc).
	Merged bool
}

// Reset empties p, keeping its slices' memory.
func (p *Point) Reset() {
	*p = Point{Tags: p.Tags[:0], FamEnd: p.FamEnd[:0], Fields: p.Fields[:0]}
}

// Family returns the tag values of family i.
func (p *Point) Family(i int) []Value {
	start := 0
	if i > 0 {
		start = p.FamEnd[i-1]
	}
	return p.Tags[start:p.FamEnd[i]]
}

// Tag returns tag t of family f, and false when the write has no such tag.
func (p *Point) Tag(f, t int) (*Value, bool) {
	if f >= len(p.FamEnd) {
		return nil, false
	}
	start := 0
	if f > 0 {
		start = p.FamEnd[f-1]
	}
	if start+t >= p.FamEnd[f] {
		return nil, false
	}
	return &p.Tags[start+t], true
}

// ParseElement reads a stream.v1.ElementValue: element_id (1), timestamp
// (2), tag_families (3).
func ParseElement(b []byte, p *Point) error { return parseElement(b, p, false) }

// parseElement is ParseElement; skipValues leaves the tag families unread
// (see Options).
func parseElement(b []byte, p *Point, skipValues bool) error {
	return parseElementLike(b, p, skipValues, false)
}

// parseElementLike reads an ElementValue or, when span, a
// cluster.v1.SpanValue, laid out alike: an id (1), the timestamp (2) and
// the tags (3: repeated families of an element, one family of a span),
// and a span's bytes (4).
func parseElementLike(b []byte, p *Point, skipValues, span bool) error {
	p.Reset()
	tags := false
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return err
		}
		b = b[n:]
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case 1:
			if err := checkUTF8(f.v, "element_id"); err != nil {
				return err
			}
			p.ElementID = f.v // a scalar: the last occurrence wins, as in protobuf
		case 2:
			err = p.timestamp(f.v)
		case 3:
			// A span's tags are a singular message: a second occurrence
			// merges into the first.
			p.Merged = p.Merged || span && tags
			tags = true
			if !skipValues {
				err = p.family(f.v)
			}
		case 4:
			if span {
				p.Span = f.v
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ParseDataPoint reads a measure.v1.DataPointValue: timestamp (1),
// tag_families (2), fields (3), version (4).
func ParseDataPoint(b []byte, p *Point) error { return parseDataPoint(b, p, false) }

// parseDataPoint is ParseDataPoint; skipValues leaves the tag families and
// fields unread (see Options).
func parseDataPoint(b []byte, p *Point, skipValues bool) error {
	p.Reset()
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			err = p.timestamp(f.v)
		case skipValues && (f.num == 2 || f.num == 3):
		case f.num == 2 && f.typ == protowire.BytesType:
			err = p.family(f.v)
		case f.num == 3 && f.typ == protowire.BytesType:
			p.Fields = append(p.Fields, Value{})
			var merged bool
			merged, err = parseValue(f.v, fieldMembers[:], &p.Fields[len(p.Fields)-1])
			p.Merged = p.Merged || merged
		case f.num == 4 && f.typ == protowire.VarintType:
			p.Version = int64(f.x) // a scalar: the last occurrence wins, as in protobuf
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *Point) timestamp(v []byte) error {
	p.Merged = p.Merged || p.Timestamp != nil
	s, n, err := parseTime(v)
	p.Timestamp, p.Seconds, p.Nanos = v, s, n
	return err
}

// family reads a model.v1.TagFamilyForWrite: tags (1).
func (p *Point) family(b []byte) error {
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
			p.Tags = append(p.Tags, Value{})
			merged, err := parseValue(v, tagMembers[:], &p.Tags[len(p.Tags)-1])
			if err != nil {
				return err
			}
			p.Merged = p.Merged || merged
		}
	}
	p.FamEnd = append(p.FamEnd, len(p.Tags))
	return nil
}

// UnixNano is a Timestamp's seconds and nanos as Unix nanoseconds, read
// the way protobuf's AsTime reads them (nanos outside 0..999999999 carry
// into the seconds, as time.Unix does); ok is false when the time does
// not fit int64 nanoseconds (years 1677..2262).
func UnixNano(seconds int64, nanos int32) (ns int64, ok bool) {
	const sec = int64(time.Second)
	if seconds > math.MaxInt64/sec+3 || seconds < math.MinInt64/sec-3 {
		return 0, false // far outside; also keeps the carry below from overflowing
	}
	s, n := seconds+int64(nanos)/sec, int64(nanos)%sec
	// Give n the sign of s, so s*sec stays in range whenever the sum does.
	switch {
	case s > 0 && n < 0:
		s, n = s-1, n+sec
	case s < 0 && n > 0:
		s, n = s+1, n-sec
	}
	if s > math.MaxInt64/sec || s < math.MinInt64/sec {
		return 0, false
	}
	ns = s * sec
	if n > 0 && ns > math.MaxInt64-n || n < 0 && ns < math.MinInt64-n {
		return 0, false
	}
	return ns + n, true
}

// UnixNano is the point's timestamp as Unix nanoseconds (see UnixNano);
// ok is false when it has none or it does not fit.
func (p *Point) UnixNano() (int64, bool) {
	if p.Timestamp == nil {
		return 0, false
	}
	return UnixNano(p.Seconds, p.Nanos)
}
