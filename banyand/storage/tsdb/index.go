package tsdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Tag indexes (docs/design/indexes.md) live in the segments of the data
// they index, under the index name of the data's name, so that they are
// logged, buffered, flushed, merged and dropped exactly as the data is:
//
//	entry = namePrefix(kind, group, segment start, IndexName(name)) be64(xxhash64(term)) be64s(ts) be64(series hash) element id
//	sorted = namePrefix(kind, group, segment start, IndexName(name)) be64(xxhash64(sorted series)) be64s(value) be64s(ts) be64(series hash) element id
//	spec  = namePrefix(kind, group, segment start, IndexName(name)) be64(xxhash64(spec series)) be64s(segment start) spec
//
// An entry's value is a stored value of the kind (version 0) whose series
// key is the term, so a scan of one term tells a hash collision apart as
// it does for data. The spec records list every index spec a write into
// the segment carried (an empty one too): an index answers for a segment
// only when every one of them covers the tag.

// IndexName is the name a name's index records are kept under. It is not
// valid UTF-8, so no stream, measure or trace has it.
func IndexName(name string) string { return "\xff" + name }

// IndexEntries are the index records of one write: the spec it was
// indexed by and the term series it is found under.
type IndexEntries struct {
	// Spec is the write's index spec (pkg/tagindex), recorded for its
	// segment; empty for a write indexed by nothing.
	Spec []byte
	// Terms are the term series keys of the write's indexed values.
	Terms [][]byte
	// Sorted are the write's values of sorted tags.
	Sorted []SortedTerm
}

// SortedTerm is a value of a sorted tag: its series and its value, which
// takes the timestamp's place in the key, so that a scan of the series
// reads values in order.
type SortedTerm struct {
	Series []byte
	Value  int64
}

// specSeen remembers which (segment, name, spec) records this process
// has logged, so that a write logs one only the first time. Cleared when
// retention drops segments: a segment made again must record its specs
// again.
type specSeen struct {
	mu   sync.Mutex
	seen map[specKey]struct{}
}

type specKey struct {
	kind        Kind
	group, name string
	start       int64
	spec        string
}

// first reports whether k is new, remembering it.
func (s *specSeen) first(k specKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[k]; ok {
		return false
	}
	if s.seen == nil {
		s.seen = make(map[specKey]struct{})
	}
	s.seen[k] = struct{}{}
	return true
}

func (s *specSeen) clear() {
	s.mu.Lock()
	s.seen = nil
	s.mu.Unlock()
}

// SpecSeries is the term series the spec records are kept under: a
// single zero byte, which no term series is (they start with a
// length-prefixed tag name and a kind byte).
var SpecSeries = []byte{0}

// indexed kinds get index records: the kinds queries select with criteria.
func (k Kind) indexed() bool { return k == KindStream || k == KindMeasure || k == KindTraceTime }

// appendIndexRecords appends the log ops of w's index records in seg.
// last is the spec key of the batch's previous write: a batch is mostly
// one name and segment, whose spec record is then not looked up again.
func (db *DB) appendIndexRecords(rec []byte, w *Write, seg Segment, key, hdr *[]byte, last *specKey) []byte {
	ix := w.Index
	iname := IndexName(w.Name)
	put := func(series []byte, ts int64, suffixTail func([]byte) []byte) {
		*key = namePrefix((*key)[:0], w.Kind, w.Group, seg.Start, iname)
		*key = binary.BigEndian.AppendUint64(*key, SeriesHash(series))
		if w.Kind == KindStream {
			*hdr = appendStreamValue((*hdr)[:0], 0, series, nil)
		} else {
			*hdr = appendMeasureValue((*hdr)[:0], 0, series, nil)
		}
		rec = append(rec, opPut)
		rec = appendBytesLP(rec, *key)
		suffix := suffixTail(appendInt64(nil, ts))
		rec = appendBytesLP(rec, suffix)
		rec = appendBytesLP(rec, *hdr)
	}
	if last.kind != w.Kind || last.start != seg.Start || last.group != w.Group || last.name != w.Name || last.spec != string(ix.Spec) {
		*last = specKey{kind: w.Kind, group: w.Group, name: w.Name, start: seg.Start, spec: string(ix.Spec)}
		if db.specs.first(*last) {
			put(SpecSeries, seg.Start, func(b []byte) []byte { return append(b, ix.Spec...) })
		}
	}
	if len(ix.Terms) == 0 && len(ix.Sorted) == 0 {
		return rec
	}
	eid := w.ElementID
	if w.Kind == KindMeasure {
		eid = ""
	}
	hash := SeriesHash(w.SeriesKey)
	for _, t := range ix.Terms {
		put(t, w.Timestamp, func(b []byte) []byte {
			return append(binary.BigEndian.AppendUint64(b, hash), eid...)
		})
	}
	for _, t := range ix.Sorted {
		put(t.Series, t.Value, func(b []byte) []byte {
			return append(binary.BigEndian.AppendUint64(appendInt64(b, w.Timestamp), hash), eid...)
		})
	}
	return rec
}

// IndexSpecs returns the index specs the writes of name into seg
// carried, each once; none when nothing of name was written with a spec
// record (written before indexes existed, or not at all).
func (db *DB) IndexSpecs(ctx context.Context, seg Segment, name string) ([][]byte, error) {
	var specs [][]byte
	err := db.ScanSegment(ctx, seg, Scan{Name: IndexName(name), Begin: seg.Start, End: seg.Start + 1, SeriesKey: SpecSeries},
		func(it *Item) error {
			specs = append(specs, bytes.Clone(it.ElementID))
			return nil
		})
	return specs, err
}

// Ref locates one record in a segment.
type Ref struct {
	SeriesHash uint64
	Timestamp  int64
	ElementID  string
}

// IndexRefs calls fn with the records of name in seg that term (a term
// series) finds with a timestamp in [begin, end), in key order of the
// index: by timestamp, then series. An error from fn stops the scan;
// desc reads it backwards.
func (db *DB) IndexRefs(ctx context.Context, seg Segment, name string, term []byte, begin, end int64, desc bool, fn func(Ref) error) error {
	return db.scanSeries(ctx, seg, Scan{Name: IndexName(name), Begin: begin, End: end, SeriesKey: term}, desc,
		func(it *Item) error {
			if len(it.ElementID) < 8 {
				return fmt.Errorf("tsdb: index entry of %v/%s: %w", seg, name, errMalformed)
			}
			return fn(Ref{SeriesHash: binary.BigEndian.Uint64(it.ElementID), Timestamp: it.Timestamp, ElementID: string(it.ElementID[8:])})
		})
}

// SortedRefs calls fn with the records of name in seg that a sorted
// series holds with a value in [lo, hi) and a timestamp in [begin, end),
// in order of value, then timestamp, series hash and element id (desc:
// the reverse). An error from fn stops the scan.
func (db *DB) SortedRefs(ctx context.Context, seg Segment, name string, series []byte, lo, hi, begin, end int64, desc bool,
	fn func(value int64, r Ref) error,
) error {
	return db.scanSeries(ctx, seg, Scan{Name: IndexName(name), Begin: lo, End: hi, SeriesKey: series}, desc,
		func(it *Item) error {
			if len(it.ElementID) < 16 {
				return fmt.Errorf("tsdb: sorted index entry of %v/%s: %w", seg, name, errMalformed)
			}
			ts := readInt64(it.ElementID)
			if ts < begin || ts >= end {
				return nil
			}
			return fn(it.Timestamp, Ref{SeriesHash: binary.BigEndian.Uint64(it.ElementID[8:]), Timestamp: ts, ElementID: string(it.ElementID[16:])})
		})
}

// scanSeries scans one series forwards or, when desc, backwards.
func (db *DB) scanSeries(ctx context.Context, seg Segment, s Scan, desc bool, fn func(*Item) error) error {
	if desc {
		return db.ScanSeriesReverse(ctx, seg, s, fn)
	}
	return db.ScanSegment(ctx, seg, s, fn)
}

// Lookup calls fn with the record of name in seg that each ref locates,
// in the order of refs (key order: series hash, timestamp, element id,
// is fastest), skipping refs that locate nothing. As a scan, it reads
// the write buffers and Pebble and keeps the highest version.
func (db *DB) Lookup(ctx context.Context, seg Segment, name string, refs []Ref, fn func(*Item) error) error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.release()

	prefix := namePrefix(nil, seg.Kind, seg.Group, seg.Start, name)
	it, err := db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("tsdb: lookup in %v: %w", seg, err)
	}
	defer func() { _ = it.Close() }()
	var key []byte
	for i, r := range refs {
		if i%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		key = dataKey(append(key[:0], prefix...), r.SeriesHash, r.Timestamp, r.ElementID)
		var stored []byte
		if it.SeekGE(key) && bytes.Equal(it.Key(), key) {
			if stored, err = it.ValueAndErr(); err != nil {
				return fmt.Errorf("tsdb: lookup %x: %w", key, err)
			}
		}
		hash := r.SeriesHash
		buffered, bufs := db.buffered(seg.Kind, prefix, &hash, r.Timestamp, r.Timestamp+1)
		for _, b := range buffered {
			if string(b.suffix[8:]) == r.ElementID &&
				(stored == nil || !seg.Kind.versioned() || versionOf(seg.Kind, b.value) >= versionOf(seg.Kind, stored)) {
				stored = b.value
			}
		}
		if stored != nil {
			err = db.emitStored(seg.Kind, r, stored, fn)
		}
		for _, b := range bufs {
			b.unref()
		}
		if err != nil {
			return err
		}
	}
	return it.Error()
}

func (db *DB) emitStored(kind Kind, r Ref, v []byte, fn func(*Item) error) error {
	item := Item{SeriesHash: r.SeriesHash, Timestamp: r.Timestamp, ElementID: []byte(r.ElementID)}
	var err error
	if kind == KindStream {
		item.Version, item.SeriesKey, item.Payload, err = parseStreamValue(v)
	} else {
		item.Version, item.SeriesKey, item.Payload, err = parseMeasureValue(v)
	}
	if err != nil {
		return fmt.Errorf("tsdb: value of %v: %w", r, err)
	}
	return fn(&item)
}
