// Package tagindex is the shape of the data nodes' tag indexes: which tags
// of a write are indexed and how (Spec, which the liaison derives from the
// index rules bound to a stream, measure or trace and sends with each
// write), and the terms a value is indexed under. A write's terms and a
// query condition's terms are built here from either side's form of a
// value, so that the same value always gives the same bytes.
//
// A term is a kind byte and the value: a string tag's whole value, an int's
// 8 bytes, each item of an array (kinds of their own: EQ on a string never
// finds an array that holds it), or, for a tag whose rule names an
// analyzer, each token of the analyzed string (pkg/textmatch). Index
// lookups only narrow what a query reads: the criteria are evaluated on
// every element read, so a term that finds more than a condition accepts
// costs a read, never a wrong answer.
package tagindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/banyand-io/banyand/pkg/textmatch"
	"github.com/banyand-io/banyand/pkg/wire"
)

// Entry is one indexed tag.
type Entry struct {
	// Family and Tag locate the tag in a value (schema order).
	Family, Tag int
	Name        string
	// Analyzer is the rule's analyzer: "" indexes whole values, else the
	// tokens of string values.
	Analyzer string
	// Sorted also indexes the tag's values in order (an int tag whose
	// rule sorts): ranges and order by the tag read it.
	Sorted bool
}

// Spec lists the indexed tags of a subject, sorted by name then analyzer.
type Spec []Entry

// Normalize sorts s and removes duplicates, so that one set of rules has
// one encoding.
func (s Spec) Normalize() Spec {
	slices.SortFunc(s, func(a, b Entry) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Analyzer, b.Analyzer)
	})
	return slices.Compact(s)
}

const (
	specFormat = 1
	flagSorted = 1
)

// Append encodes s: a format byte, then per entry uvarint(family)
// uvarint(tag) lp(name) lp(analyzer) flags (1: sorted). An empty spec
// encodes as nothing.
func (s Spec) Append(dst []byte) []byte {
	if len(s) == 0 {
		return dst
	}
	dst = append(dst, specFormat)
	for _, e := range s {
		dst = binary.AppendUvarint(dst, uint64(e.Family))
		dst = binary.AppendUvarint(dst, uint64(e.Tag))
		dst = appendLP(dst, e.Name)
		dst = appendLP(dst, e.Analyzer)
		var flags byte
		if e.Sorted {
			flags |= flagSorted
		}
		dst = append(dst, flags)
	}
	return dst
}

// ErrMalformed is a spec that does not decode.
var ErrMalformed = errors.New("tagindex: malformed index spec")

// maxPosition bounds a family or tag position: more than any schema has.
const maxPosition = 1 << 16

// Parse decodes a spec Append wrote.
func Parse(b []byte) (Spec, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != specFormat {
		return nil, fmt.Errorf("%w: format %d", ErrMalformed, b[0])
	}
	b = b[1:]
	var s Spec
	for len(b) > 0 {
		var e Entry
		var fam, tag uint64
		var err error
		if fam, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if tag, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if fam >= maxPosition || tag >= maxPosition {
			return nil, fmt.Errorf("%w: tag position %d/%d", ErrMalformed, fam, tag)
		}
		e.Family, e.Tag = int(fam), int(tag)
		if e.Name, b, err = readLP(b); err != nil {
			return nil, err
		}
		if e.Analyzer, b, err = readLP(b); err != nil {
			return nil, err
		}
		if e.Analyzer != "" && !textmatch.Known(e.Analyzer) {
			return nil, fmt.Errorf("%w: analyzer %q", ErrMalformed, e.Analyzer)
		}
		if len(b) == 0 || b[0]&^flagSorted != 0 {
			return nil, fmt.Errorf("%w: flags", ErrMalformed)
		}
		e.Sorted, b = b[0]&flagSorted != 0, b[1:]
		s = append(s, e)
	}
	return s, nil
}

// Covers reports whether s indexes tag name with analyzer.
func (s Spec) Covers(name, analyzer string) bool {
	return slices.ContainsFunc(s, func(e Entry) bool { return e.Name == name && e.Analyzer == analyzer })
}

// CoversSorted reports whether s indexes tag name's values in order.
func (s Spec) CoversSorted(name string) bool {
	return slices.ContainsFunc(s, func(e Entry) bool { return e.Name == name && e.Analyzer == "" && e.Sorted })
}

// Sorted series: a sorted tag's values are kept in three, each in order
// of (value, timestamp, series, element id): its ints, its nulls (the tag
// missing or null; value 0) and values of any other type (value 0), which
// an order reading the index cannot place.
const (
	SortInts  byte = 'o'
	SortNulls byte = 'n'
	SortOther byte = 'x'
)

// SortSeries is the key of one of a tag's sorted series.
func SortSeries(dst []byte, tag string, class byte) []byte {
	dst = appendLP(dst, tag)
	return append(dst, '#', class)
}

// Term kinds: the first byte of a term.
const (
	KindStr     byte = 's'
	KindInt     byte = 'i'
	KindTime    byte = 't'
	KindStrItem byte = 'S' // an item of a string array
	KindIntItem byte = 'I' // an item of an int array
	KindToken   byte = 'k' // a token of an analyzed string
)

// Series is the key under which a data node keeps the entries of one term
// of one tag: lp(tag) kind value.
func Series(dst []byte, tag string, kind byte, value []byte) []byte {
	dst = appendLP(dst, tag)
	dst = append(dst, kind)
	return append(dst, value...)
}

// TokenSeries is the Series of a token of an analyzed string: the
// analyzer is part of the value, since the analyzers of two rules on one
// tag make different tokens of it.
func TokenSeries(dst []byte, tag, analyzer string, token []byte) []byte {
	dst = Series(dst, tag, KindToken, nil)
	dst = appendLP(dst, analyzer)
	return append(dst, token...)
}

// IntValue is an int term's value bytes.
func IntValue(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

// TimeValue is a timestamp term's value bytes.
func TimeValue(dst []byte, seconds int64, nanos int32) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(seconds))
	return binary.BigEndian.AppendUint32(dst, uint32(nanos))
}

// WriteTerms calls term with the term series (Series) of each indexed
// value of p, a parsed write, and sorted with the sorted series and value
// of each sorted tag. A tag the write lacks, a null, binary data and (for
// an analyzed entry) anything but a string have no term. The slices the
// callbacks get are reused by the next call.
func (s Spec) WriteTerms(p *wire.Point, term func(series []byte), sorted func(series []byte, value int64)) {
	var buf []byte
	for _, e := range s {
		v, ok := p.Tag(e.Family, e.Tag)
		if e.Sorted && e.Analyzer == "" {
			switch {
			case !ok || v.Kind.IsNull():
				sorted(SortSeries(buf[:0], e.Name, SortNulls), 0)
			case v.Kind == wire.KindInt:
				sorted(SortSeries(buf[:0], e.Name, SortInts), v.Int)
			default:
				sorted(SortSeries(buf[:0], e.Name, SortOther), 0)
			}
		}
		if !ok {
			continue
		}
		if e.Analyzer != "" {
			each := func(str []byte) {
				for _, tok := range textmatch.Terms(e.Analyzer, string(str)) {
					buf = TokenSeries(buf[:0], e.Name, e.Analyzer, []byte(tok))
					term(buf)
				}
			}
			switch v.Kind {
			case wire.KindStr:
				each(v.Bytes)
			case wire.KindStrArray:
				v.StrArray(each)
			}
			continue
		}
		switch v.Kind {
		case wire.KindStr:
			term(Series(buf[:0], e.Name, KindStr, v.Bytes))
		case wire.KindInt:
			term(Series(buf[:0], e.Name, KindInt, IntValue(nil, v.Int)))
		case wire.KindTimestamp:
			sec, nanos := v.Time()
			term(Series(buf[:0], e.Name, KindTime, TimeValue(nil, sec, nanos)))
		case wire.KindStrArray:
			v.StrArray(func(item []byte) { buf = Series(buf[:0], e.Name, KindStrItem, item); term(buf) })
		case wire.KindIntArray:
			v.IntArray(func(item int64) { buf = Series(buf[:0], e.Name, KindIntItem, IntValue(nil, item)); term(buf) })
		}
	}
}

func appendLP(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, ErrMalformed
	}
	return v, b[n:], nil
}

func readLP(b []byte) (string, []byte, error) {
	n, rest, err := uvarint(b)
	if err != nil || n > uint64(len(rest)) {
		return "", nil, ErrMalformed
	}
	return string(rest[:n]), rest[n:], nil
}
