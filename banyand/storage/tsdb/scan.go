package tsdb

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// Item is one stored record as a scan sees it. Its slices alias the
// iterator and are valid only during the callback.
type Item struct {
	SeriesHash uint64
	SeriesKey  []byte
	Timestamp  int64
	ElementID  []byte // streams and properties
	Version    int64  // a measure's; a stream element's when written with one, else 0
	Payload    []byte // the marshalled ElementValue or DataPointValue

	key []byte // the key past the series hash, for merging with the buffers
}

// Scan selects the records ScanSegment visits.
type Scan struct {
	Name string
	// Begin and End bound timestamps to [Begin, End), Unix nanoseconds.
	Begin, End int64
	// SeriesKey, when set, restricts the scan to one series: the iterator
	// seeks straight to it instead of visiting every series.
	SeriesKey []byte
}

// checkEvery is how many records a scan visits between checks of ctx.
const checkEvery = 1024

// SegmentsIn returns the segments of kind and group that overlap
// [begin, end), oldest first.
func (db *DB) SegmentsIn(kind Kind, group string, begin, end int64) []Segment {
	return db.segs.overlapping(kind, group, begin, end)
}

// ScanSegment calls fn for each record of s.Name in seg whose timestamp is in
// [s.Begin, s.End), in key order: series hash, then timestamp, then element
// id. An error from fn stops the scan and is returned as is.
func (db *DB) ScanSegment(ctx context.Context, seg Segment, s Scan, fn func(*Item) error) error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.release()

	prefix := namePrefix(nil, seg.Kind, seg.Group, seg.Start, s.Name)
	opts := &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)}
	var hash uint64
	var onlyHash *uint64
	if s.SeriesKey != nil {
		// One series: both bounds sit inside it, so every key is a match on time.
		hash = SeriesHash(s.SeriesKey)
		onlyHash = &hash
		opts.LowerBound = dataKey(bytes.Clone(prefix), hash, s.Begin, "")
		opts.UpperBound = dataKey(bytes.Clone(prefix), hash, s.End, "")
	}
	// The buffers before the iterator: a buffer ingested in between is
	// then seen twice (and merged), never missed.
	buffered, bufs := db.buffered(seg.Kind, prefix, onlyHash, s.Begin, s.End)
	// The records alias the buffers' arenas: held until the scan is done.
	defer func() {
		for _, b := range bufs {
			b.unref()
		}
	}()
	it, err := db.pdb.NewIterWithContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("tsdb: scan %v: %w", seg, err)
	}
	m := &bufferMerge{kind: seg.Kind, seriesKey: s.SeriesKey, pending: buffered, fn: fn}
	err = db.scan(ctx, it, prefix, s, seg.Kind, m.pebbleItem)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tsdb: scan %v: %w", seg, cerr)
	}
	if err == nil {
		err = m.rest()
	}
	return err
}

// buffered returns the records of name prefix np in the write buffers, in
// key order, duplicates resolved, and the buffers, each referenced once:
// the caller unrefs them when done with the records.
func (db *DB) buffered(kind Kind, np []byte, onlyHash *uint64, begin, end int64) ([]bufRecord, []*memBuffer) {
	db.bufMu.RLock()
	bufs := []*memBuffer{db.mem}
	if db.imm != nil {
		bufs = []*memBuffer{db.imm, db.mem} // oldest first
	}
	for _, b := range bufs {
		b.ref()
	}
	// The mutable buffer's records are read up to what the log has
	// synced (see memBuffer); a sealed one's are all synced.
	durable := db.wal.durable()
	db.bufMu.RUnlock()
	lists := make([][]bufRecord, 0, len(bufs))
	for _, b := range bufs {
		visible := uint64(allVisible)
		if b == bufs[len(bufs)-1] {
			visible = durable
		}
		if l := b.collect(nil, np, onlyHash, begin, end, visible); len(l) > 0 {
			lists = append(lists, l)
		}
	}
	return mergeRecords(kind, lists), bufs
}

// bufferMerge interleaves buffered records with Pebble's in key order. A
// key in both is read as the buffer's record, which is the newer write,
// except that for measures the higher version wins (as measureMerger).
type bufferMerge struct {
	kind      Kind
	seriesKey []byte
	pending   []bufRecord
	fn        func(*Item) error
	item      Item
}

func (m *bufferMerge) pebbleItem(it *Item) error {
	for len(m.pending) > 0 {
		r := &m.pending[0]
		c := compareRecordKey(r.hash, r.suffix, &bufRecord{hash: it.SeriesHash, suffix: it.key})
		if c > 0 {
			break
		}
		m.pending = m.pending[1:]
		if c == 0 {
			if m.kind.versioned() && it.Version > versionOf(m.kind, r.value) {
				return m.fn(it) // Pebble's has the higher version
			}
			return m.emit(r)
		}
		if err := m.emit(r); err != nil {
			return err
		}
	}
	return m.fn(it)
}

func versionOf(k Kind, v []byte) int64 {
	ver, _ := valueVersion(k, v)
	return ver
}

// rest emits the buffered records after Pebble's last.
func (m *bufferMerge) rest() error {
	for i := range m.pending {
		if err := m.emit(&m.pending[i]); err != nil {
			return err
		}
	}
	m.pending = nil
	return nil
}

func (m *bufferMerge) emit(r *bufRecord) error {
	m.item = Item{SeriesHash: r.hash, Timestamp: readInt64(r.suffix), ElementID: r.suffix[8:]}
	var err error
	if m.kind == KindStream {
		m.item.Version, m.item.SeriesKey, m.item.Payload, err = parseStreamValue(r.value)
	} else {
		m.item.Version, m.item.SeriesKey, m.item.Payload, err = parseMeasureValue(r.value)
	}
	if err != nil {
		return fmt.Errorf("tsdb: buffered value: %w", err)
	}
	// A different series with the same hash: not ours.
	if m.seriesKey != nil && !bytes.Equal(m.item.SeriesKey, m.seriesKey) {
		return nil
	}
	return m.fn(&m.item)
}

func (db *DB) scan(ctx context.Context, it *pebble.Iterator, prefix []byte, s Scan, kind Kind, fn func(*Item) error) error {
	seek := make([]byte, 0, len(prefix)+16)
	var item Item
	n := 0
	for valid := it.SeekGE(dataKey(append(seek[:0], prefix...), 0, s.Begin, "")); valid; {
		if n++; n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		k := it.Key()
		hash, ts, eid, err := keyTail(k[len(prefix):])
		if err != nil {
			return fmt.Errorf("tsdb: key %x: %w", k, err)
		}
		// Outside the time range: jump to the range of this series or the
		// next one rather than stepping through every record.
		if ts < s.Begin {
			valid = it.SeekGE(dataKey(append(seek[:0], prefix...), hash, s.Begin, ""))
			continue
		}
		if ts >= s.End {
			if hash == math.MaxUint64 {
				break
			}
			valid = it.SeekGE(dataKey(append(seek[:0], prefix...), hash+1, s.Begin, ""))
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("tsdb: read %x: %w", k, err)
		}
		item = Item{SeriesHash: hash, Timestamp: ts, ElementID: eid, key: k[len(prefix)+8:]}
		if kind == KindStream {
			item.Version, item.SeriesKey, item.Payload, err = parseStreamValue(v)
		} else {
			item.Version, item.SeriesKey, item.Payload, err = parseMeasureValue(v)
		}
		if err != nil {
			return fmt.Errorf("tsdb: value of %x: %w", k, err)
		}
		// A different series with the same hash: not ours.
		if s.SeriesKey == nil || bytes.Equal(item.SeriesKey, s.SeriesKey) {
			if err := fn(&item); err != nil {
				return err
			}
		}
		valid = it.Next()
	}
	return it.Error()
}
