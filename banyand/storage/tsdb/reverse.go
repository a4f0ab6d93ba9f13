package tsdb

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// ScanSeriesReverse is ScanSegment for one series (s.SeriesKey must be
// set) in descending key order: latest timestamp (or, in a sorted index
// series, highest value) first. Of a key in both the write buffers and
// Pebble it reads the buffer's record unless Pebble's has the higher
// version, as ScanSegment does.
func (db *DB) ScanSeriesReverse(ctx context.Context, seg Segment, s Scan, fn func(*Item) error) error {
	if s.SeriesKey == nil {
		return fmt.Errorf("tsdb: a reverse scan of %v reads one series", seg)
	}
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.release()

	prefix := namePrefix(nil, seg.Kind, seg.Group, seg.Start, s.Name)
	hash := SeriesHash(s.SeriesKey)
	opts := &pebble.IterOptions{
		LowerBound: dataKey(bytes.Clone(prefix), hash, s.Begin, ""),
		UpperBound: dataKey(bytes.Clone(prefix), hash, s.End, ""),
	}
	// The buffers before the iterator, as in ScanSegment.
	buffered, bufs := db.buffered(seg.Kind, prefix, &hash, s.Begin, s.End)
	defer func() {
		for _, b := range bufs {
			b.unref()
		}
	}()
	it, err := db.pdb.NewIterWithContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("tsdb: reverse scan %v: %w", seg, err)
	}
	defer func() { _ = it.Close() }()
	skip := len(prefix) + 8 // the suffix follows the series hash
	i := len(buffered) - 1
	valid := it.Last()
	for n := 1; valid || i >= 0; n++ {
		if n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var suffix, value []byte
		prev := false // step Pebble's iterator back once the record is used
		c := 1        // > 0: the buffer's record comes first (is greater)
		if valid {
			c = -1
			if i >= 0 {
				c = bytes.Compare(buffered[i].suffix, it.Key()[skip:])
			}
		}
		switch {
		case c > 0:
			suffix, value = buffered[i].suffix, buffered[i].value
			i--
		default:
			suffix = it.Key()[skip:]
			v, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("tsdb: read %x: %w", it.Key(), err)
			}
			value = v
			if c == 0 {
				if !seg.Kind.versioned() || versionOf(seg.Kind, buffered[i].value) >= versionOf(seg.Kind, v) {
					value = buffered[i].value
				}
				i--
			}
			prev = true
		}
		item := Item{SeriesHash: hash, Timestamp: readInt64(suffix), ElementID: suffix[8:]}
		var perr error
		if seg.Kind == KindStream {
			item.Version, item.SeriesKey, item.Payload, perr = parseStreamValue(value)
		} else {
			item.Version, item.SeriesKey, item.Payload, perr = parseMeasureValue(value)
		}
		if perr != nil {
			return fmt.Errorf("tsdb: value in %v: %w", seg, perr)
		}
		// A different series with the same hash is not ours.
		if bytes.Equal(item.SeriesKey, s.SeriesKey) {
			if err := fn(&item); err != nil {
				return err
			}
		}
		if prev {
			valid = it.Prev()
		}
	}
	return it.Error()
}
